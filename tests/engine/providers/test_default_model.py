"""The built-in default agent finds a model the way users expect, or says how to give it one.

Each case runs ``rienda run hello`` as a real process with nothing but the environment
(and, where named, ``config.yaml``): keys point their vendor's base URL at a fixture server
on 127.0.0.1 speaking that vendor's format (no request leaves the machine), the Ollama case
asks a fixture that answers ``GET /api/tags`` as Ollama does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ollama
import pytest

from rienda_kernel.engine.providers.choice import ANTHROPIC_MODEL, OPENAI_MODEL, choose_default_model, ollama_models

from ...helpers.ports import free_port
from ...helpers.vendor_streams import anthropic as anthropic_stream
from ...helpers.vendor_streams import ollama as ollama_stream
from ...helpers.vendor_streams import openai as openai_stream
from ...helpers.vendor_wire import serving
from ...helpers.vendors import fake_anthropic, fake_ollama, fake_openai

MODEL_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST",
                   "OLLAMA_API_KEY", "RIENDA_HOME")
TAGS = {"models": [
    {"name": "qwen3:0.6b", "model": "qwen3:0.6b", "modified_at": "2026-11-30T08:00:00Z", "size": 522653767,
     "digest": "7df6b6e09427", "details": {"format": "gguf", "family": "qwen3", "parameter_size": "751.63M",
                                           "quantization_level": "Q4_K_M"}},
    {"name": "llama3.2:latest", "model": "llama3.2:latest", "modified_at": "2026-11-29T08:00:00Z", "size": 2019393189,
     "digest": "a80c4f17acd5", "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B",
                                           "quantization_level": "Q4_K_M"}},
]}


@pytest.fixture
def place(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def nobody_listens() -> str:
    return f"127.0.0.1:{free_port()}"


def rienda_run(home: Path, work: Path, **env: str) -> subprocess.CompletedProcess:
    """``rienda run hello`` with only ``env`` saying where models are."""
    clean = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "hello"], cwd=work,
                          env={**clean, "OLLAMA_HOST": nobody_listens(), "RIENDA_HOME": str(home), **env},
                          capture_output=True, text=True, timeout=60)


def chosen_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "the default agent uses" in line]
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_openai_key_chooses_an_openai_model(place):
    home, work = place
    with serving(fake_openai()) as fake:
        fake.replies.append({"events": openai_stream.text_stream("Hello", " there.")})
        done = rienda_run(home, work, OPENAI_API_KEY="sk-test-0123456789abcdef", OPENAI_BASE_URL=fake.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello there.\n"
    assert f"uses {OPENAI_MODEL} (OPENAI_API_KEY is set" in chosen_line(done.stderr)
    assert fake.requests[0]["model"] == OPENAI_MODEL.partition("/")[2]
    header = json.loads(next((home / "sessions").glob("*.jsonl")).read_text().splitlines()[0])
    assert header["model"] == OPENAI_MODEL  # a resume goes on with the model it chose


def test_an_anthropic_key_chooses_an_anthropic_model_when_there_is_no_openai_key(place):
    home, work = place
    with serving(fake_anthropic()) as fake:
        fake.replies.append({"events": anthropic_stream.text_stream("Hi.")})
        done = rienda_run(home, work, ANTHROPIC_API_KEY="sk-ant-test-0123456789abcdef", ANTHROPIC_BASE_URL=fake.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hi.\n"
    assert f"uses {ANTHROPIC_MODEL} (ANTHROPIC_API_KEY is set" in chosen_line(done.stderr)
    assert fake.requests[0]["model"] == ANTHROPIC_MODEL.partition("/")[2]


def test_the_openai_key_comes_before_the_anthropic_key(place):
    home, _ = place
    choice = choose_default_model(home / "config.yaml", {"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b"})
    assert choice.model == OPENAI_MODEL


def test_a_local_ollama_server_gives_its_first_model(place):
    home, work = place
    ollama.ListResponse.model_validate(TAGS)  # the fixture answers in Ollama's own shape
    with serving(fake_ollama()) as fake:
        fake.gets["/api/tags"] = TAGS
        fake.replies.append({"events": ollama_stream.text_stream("Hello from", " qwen.")})
        done = rienda_run(home, work, OLLAMA_HOST=fake.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from qwen.\n"
    assert f"uses ollama/qwen3:0.6b (an Ollama server answers at {fake.url}" in chosen_line(done.stderr)
    assert fake.requests[0]["model"] == "qwen3:0.6b"


def test_default_model_in_config_wins_over_any_key(place):
    home, work = place
    (home / "config.yaml").write_text("default_model: ollama/llama3.2:latest\n")
    with serving(fake_ollama()) as fake:
        fake.replies.append({"events": ollama_stream.text_stream("Configured.")})
        done = rienda_run(home, work, OLLAMA_HOST=fake.url, OPENAI_API_KEY="sk-test-0123456789abcdef")
    assert done.returncode == 0, done.stderr
    assert fake.requests[0]["model"] == "llama3.2:latest"
    assert "the default agent uses" not in done.stderr  # nothing was chosen: the user said


def test_with_nothing_configured_the_run_says_every_way_and_exits_2_before_any_session(place):
    home, work = place
    done = rienda_run(home, work)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    for way in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ollama serve", "default_model:", "providers:",
                str(home / "config.yaml"), "rienda demo"):
        assert way in done.stderr, way
    assert "script.yaml" not in done.stderr and "Traceback" not in done.stderr
    assert not (home / "sessions").exists()


def test_an_ollama_server_without_models_gives_no_model(place):
    home, work = place
    with serving(fake_ollama()) as fake:
        fake.gets["/api/tags"] = {"models": []}
        assert ollama_models(fake.url) == []
        done = rienda_run(home, work, OLLAMA_HOST=fake.url)
    assert done.returncode == 2 and "ollama serve" in done.stderr


def test_something_else_answering_at_the_ollama_host_is_not_a_model(place):
    with serving(fake_openai()) as fake:  # a server, but not Ollama: /api/tags is a 404
        assert ollama_models(fake.origin) == []
