"""A partial answer (a stream cut by the server, or a run interrupted mid-stream) is
reviewed by ``afterModelResponse`` before it is saved, as every answer is: a redaction
hook keeps a secret in it out of the session file.

The cut stream comes from a real HTTP server on 127.0.0.1 speaking OpenAI's Chat
Completions stream, which closes the connection before the body it announced is complete.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from rienda_kernel.engine import CancelToken, NonInteractiveUI
from rienda_kernel.engine.events import TextDelta
from rienda_kernel.engine.runtime.rienda import Rienda
from tests.helpers import paths
from tests.helpers.homes import write_agent

CARD = "4111111111111111"
REDACT = (paths.EXAMPLES / "hooks" / "redact" / "index.js").read_text()


def _chunk(text: str) -> bytes:
    event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return f"data: {json.dumps(event)}\n\n".encode()


class _CutStream(BaseHTTPRequestHandler):
    """Streams the card number, then harmless words (so that the last lines the server
    sent, which the provider's error quotes, hold no secret), then closes the connection
    halfway through the body it announced."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = _chunk(f"card {CARD} ") + b"".join(_chunk(f"w{i} ") for i in range(8))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body) * 2))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def cut_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CutStream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def _redacting_agent(rig, model: str) -> None:
    rig.write_hook("redact", REDACT)
    write_agent(rig.home, "talker", [], ["redact"], model, description="Talks.", body="Talk.")


def _session_text(rig, session_id: str) -> str:
    return (rig.home / "sessions" / f"{session_id}.jsonl").read_text()


def _interrupted_when(rig, ui, ready: threading.Event, never: str):
    """Run "hi" with the agent ``talker`` on a thread, interrupt it once ``ready`` is set,
    and return its result (which must say interrupted)."""
    cancel = CancelToken()
    conversation = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("talker")
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", conversation.run("hi", ui, cancel)))
    worker.start()
    assert ready.wait(30), never
    cancel.cancel()
    worker.join(30)
    assert not worker.is_alive(), "the run did not end after the interrupt"
    assert box["result"].reason == "interrupted"
    return box["result"]


def _saved_assistant(rig, session_id: str) -> dict:
    lines = [json.loads(line) for line in _session_text(rig, session_id).splitlines()]
    [saved] = [line for line in lines if line.get("role") == "assistant"]
    return saved


def test_a_stream_cut_by_the_server_is_saved_reviewed_by_after_model_response(rig, cut_server):
    (rig.home / "config.yaml").write_text(yaml.safe_dump(
        {"providers": {"cut": {"api": "openai", "base_url": cut_server, "api_key_env": None, "max_retries": 0}}}))
    _redacting_agent(rig, "cut/m")
    ui = NonInteractiveUI()
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("talker").run("hi", ui)
    assert result.reason == "error", result.error
    assert CARD in "".join(e.text for e in ui.events if isinstance(e, TextDelta))  # it did stream
    saved = _saved_assistant(rig, result.session_id)
    assert saved["meta"] == {"error": True, "saw": {"text": None}}  # the hook removed text: withheld
    assert saved["text"].startswith("card [redacted] w0 ")
    assert CARD not in _session_text(rig, result.session_id)


def test_an_interrupted_stream_is_saved_reviewed_by_after_model_response(rig):
    words = " ".join(f"w{i}" for i in range(200))
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump([{"thinking": "pondering it", "text": f"card {CARD} {words}",
                                                               "chunk_delay_ms": 10}]))
    _redacting_agent(rig, "scripted/script.yaml")
    seen = threading.Event()
    ui = NonInteractiveUI(sink=lambda e: seen.set() if isinstance(e, TextDelta) and e.text.startswith("w5") else None)
    result = _interrupted_when(rig, ui, seen, "the stream never reached w5")
    saved = _saved_assistant(rig, result.session_id)
    assert saved["meta"] == {"interrupted": True, "saw": {"text": None}}
    assert saved["thinking"] == "pondering it"
    assert saved["text"].startswith("card [redacted] w0 w1 w2 w3 w4 w5") and "w199" not in saved["text"]
    assert CARD not in _session_text(rig, result.session_id)


def test_a_stop_during_after_model_response_saves_no_unreviewed_text(rig):
    """The review itself is interrupted (a hook waits on a confirm): what it had not
    reviewed is withheld, and the session says so."""
    rig.write_hook("review", 'module.exports = { afterModelResponse(ctx, r) {'
                             ' ctx.confirm({ title: "Keep this answer?", body: "" }); return { text: "[reviewed]" }; } };')
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "talker.md").write_text(
        "---\ndescription: Talks.\nmodel: scripted/script.yaml\ntools: []\nhooks: [review]\n---\nTalk.\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump([{"text": f"card {CARD}"}]))
    asked = threading.Event()

    class Reviewer(NonInteractiveUI):
        def ask(self, title, body, cancel):
            asked.set()
            cancel.wait()
            return False, "interrupted"

    result = _interrupted_when(rig, Reviewer(), asked, "the review never asked")
    saved = _saved_assistant(rig, result.session_id)
    assert saved["text"] == "" and saved["meta"]["interrupted"] is True and set(saved["meta"]) == {"interrupted",
                                                                                                "withheld"}
    # Named when the stop reached the hook while it ran; the confirm answered "interrupted"
    # may also let it return first, and the stop is then seen after it.
    assert re.fullmatch(r"stopped during afterModelResponse; the text those hooks had not reviewed was not saved"
                        r"( \(hook review was running, \d+\.\d s\))?", saved["meta"]["withheld"]), saved["meta"]
    assert CARD not in _session_text(rig, result.session_id)
