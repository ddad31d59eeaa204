"""With no model anywhere, a notebook's first prompt says, as Markdown, how to give one.

The Rienda kernel's first cell and ``%rienda ask`` in a Python 3 kernel, both real kernels
through jupyter_client, with no key set and nothing listening at the Ollama host.
"""

from __future__ import annotations

from ...helpers.frontend import Frontend
from ...helpers.ports import free_port

NO_MODEL = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
WAYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ollama serve", "default_model:", "providers:")


def markdowns(messages):
    return [m["content"]["data"]["text/markdown"] for m in messages
            if m["msg_type"] == "display_data" and "text/markdown" in m["content"]["data"]]


def check_advice(reply, messages, home):
    assert reply["status"] == "error" and "no model" in reply["evalue"]
    advice = [text for text in markdowns(messages) if "No model for the default agent" in text]
    assert len(advice) == 1, markdowns(messages)
    for way in WAYS:
        assert way in advice[0], way
    assert str(home / "config.yaml") in advice[0]
    assert [m for m in messages if m["msg_type"] == "error"], "batch runners must see the failure"
    assert not (home / "sessions").exists()


def test_the_first_cell_of_a_rienda_notebook_says_how_to_give_a_model(kernelspec_path, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    frontend = Frontend(home, work, NO_MODEL)
    try:
        reply, messages = frontend.run("Hello?")
        check_advice(reply, messages, home)
    finally:
        frontend.close()


def test_rienda_ask_in_a_python_kernel_says_how_to_give_a_model(kernelspec_path, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    frontend = Frontend(home, work, NO_MODEL, kernel_name="python3")
    try:
        reply, _ = frontend.run("%load_ext rienda_kernel")
        assert reply["status"] == "ok", reply
        reply, messages = frontend.run("%rienda ask Hello?")
        assert reply["status"] == "error", reply
        advice = [text for text in markdowns(messages) if "No model for the default agent" in text]
        assert len(advice) == 1 and all(way in advice[0] for way in WAYS), markdowns(messages)
        assert not (home / "sessions").exists()
    finally:
        frontend.close()
