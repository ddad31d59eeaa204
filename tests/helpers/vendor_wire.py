"""What the provider tests share.

:class:`ReplayServer` is a real HTTP server on 127.0.0.1 that replays a vendor's wire
format. Each vendor's tests build one with that vendor's framing and validators: every
request body it receives and every event it serves passes through the official package's
types (``openai``, ``anthropic``, ``ollama``), so the fixtures are the vendor's format, not
ours. A validation failure is recorded in ``problems``; the ``server`` fixtures assert it
stays empty. A request the vendor's API refuses (``vendors.Rejected``: a tool call left
without its result...) is answered HTTP 400 with the vendor's own error body.

:class:`Caller` calls a provider the same way in every vendor's tests;
:func:`counting_agent` writes the agent the end-to-end runs use; :func:`server_process`
runs a third-party server (fakellm, llama.cpp's) for the length of a fixture.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from rienda_kernel.engine import CancelToken
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine.sessions.messages import Message
from rienda_kernel.engine.providers import ModelRequest, Provider, TextChunk, ToolSpec

from .extensions import WORD_COUNT
from .homes import write_agent
from .ports import free_port  # noqa: F401 - bench/bench_startup.py imports it from here


def materialize(value: Any) -> Any:
    """Force pydantic's lazy Iterable validators (they validate only when iterated)."""
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Iterable):
        return [materialize(v) for v in value]
    return value


class ReplayServer:
    """Answers ``POST path`` from a list of replies, recording each request.

    A reply is ``{"events": [...], "done": True, "delay": 0.0}`` for a 200 stream, or
    ``{"status": 429, "headers": {...}, "body": {...}}`` for an error (``"raw"``: its body as
    text, sent as is). Events that are dicts
    are validated with ``validate_event`` and framed with ``encode``; strings are sent as
    ``encode_raw`` frames them (for garbled data). ``trailer`` follows the events unless the
    reply says ``"done": False`` (a stream cut short).

    With ``upstream`` (an origin), each request is relayed there instead and the response
    streamed back line by line, each JSON payload (an SSE ``data:`` line or an NDJSON line)
    checked with ``validate_event`` on the way. ``upstream_fields`` are added to each request
    relayed, after it was checked as the client sent it (a server's own knob, such as
    llama.cpp's ``n_predict``, that the vendor's API would refuse).
    """

    def __init__(self, path: str, content_type: str, *, encode: Callable[[dict[str, Any]], str],
                 encode_raw: Callable[[str], str], validate_request: Callable[[dict[str, Any]], None],
                 validate_event: Callable[[dict[str, Any]], None], trailer: str = "",
                 upstream: str | None = None) -> None:
        self.path = path
        self.upstream = upstream
        self.upstream_fields: dict[str, Any] = {}
        self.content_type = content_type
        self.encode = encode
        self.encode_raw = encode_raw
        self.validate_request = validate_request
        self.validate_event = validate_event
        self.trailer = trailer
        self.replies: list[dict[str, Any]] = []
        self.gets: dict[str, Any] = {}  # path -> the JSON a GET of it answers (e.g. Ollama's /api/tags)
        # path (other than ``path``) -> a function of the request body giving the JSON a POST answers
        # (e.g. Ollama's /api/show); each such request is kept in ``asked`` as (path, body)
        self.posts: dict[str, Callable[[dict[str, Any]], Any]] = {}
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.problems: list[str] = []
        # what answers a request when no reply is queued (None: HTTP 500, "no reply")
        self.fallback: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                found = self.path in fake.gets
                payload = json.dumps(fake.gets[self.path] if found else {"error": "not found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != fake.path and self.path in fake.posts:
                    fake.asked.append((self.path, body))
                    fake.answer(self, fake.posts[self.path], body)
                    return
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                if self.path != fake.path:
                    fake.problems.append(f"wrong path {self.path}")
                reply = None
                try:
                    fake.validate_request(body)
                except Exception as exc:  # the request is not in the vendor's format
                    fake.problems.append(f"request: {exc}")
                    if hasattr(exc, "body"):  # vendors.Rejected: the vendor answers 400, as the real one does
                        reply = {"status": 400, "body": exc.body}
                if reply is None:
                    reply = fake.replies.pop(0) if fake.replies else fake.fallback(body) if fake.fallback else {
                        "status": 500, "body": {"error": {"message": "no reply"}}}
                try:
                    if fake.upstream:
                        fake.relay(self, body)
                    else:
                        fake.serve(self, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler

    def answer(self, handler: BaseHTTPRequestHandler, answering: Callable[[dict[str, Any]], Any],
               body: dict[str, Any]) -> None:
        """Answer a POST of one of ``posts``' paths with the JSON ``answering(body)`` gives
        (a ``(status, JSON)`` pair: with that status; an exception: a problem, and HTTP 400)."""
        try:
            answered = answering(body)
            status, answered = answered if isinstance(answered, tuple) else (200, answered)
            payload = json.dumps(answered).encode()
        except Exception as exc:  # the request is not in the vendor's format
            self.problems.append(f"request {body}: {exc}")
            status, payload = 400, json.dumps({"error": str(exc)}).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def serve(self, handler: BaseHTTPRequestHandler, reply: dict[str, Any]) -> None:
        status = reply.get("status", 200)
        if status != 200:
            payload = reply["raw"].encode() if "raw" in reply else json.dumps(reply.get("body", {})).encode()
            handler.send_response(status)
            for name, value in reply.get("headers", {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", self.content_type)
        handler.end_headers()
        for event in reply["events"]:
            if isinstance(event, dict):
                try:
                    self.validate_event(event)
                except Exception as exc:  # our fixture is not the vendor's format
                    self.problems.append(f"event {event}: {exc}")
                frame = self.encode(event)
            else:
                frame = self.encode_raw(event)
            handler.wfile.write(frame.encode())
            handler.wfile.flush()
            if reply.get("delay"):
                time.sleep(reply["delay"])
        if reply.get("done", True) and self.trailer:
            handler.wfile.write(self.trailer.encode())
        handler.wfile.flush()

    def relay(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with httpx.stream("POST", self.upstream + self.path, json={**body, **self.upstream_fields},
                          timeout=30) as response:
            handler.send_response(response.status_code)
            handler.send_header("Content-Type", response.headers.get("content-type", self.content_type))
            handler.end_headers()
            for line in response.iter_lines():
                payload = line[5:].strip() if line.startswith("data:") else line if line.startswith("{") else ""
                if payload and payload != "[DONE]":
                    try:
                        self.validate_event(json.loads(payload))
                    except Exception as exc:  # the upstream is not speaking the vendor's format
                        self.problems.append(f"upstream event {payload}: {exc}")
                handler.wfile.write(line.encode() + b"\n")
                handler.wfile.flush()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def serving(server: ReplayServer) -> Iterator[ReplayServer]:
    """``server`` for the block, then closed; fails if any request or event it saw was not
    in the vendor's format, or if replies queued for it were never asked for."""
    try:
        yield server
    finally:
        server.close()
    assert not server.problems, server.problems
    assert not server.replies, f"{len(server.replies)} queued repl(ies) never requested: {server.replies}"


# -- calling a provider the way every vendor's tests do ---------------------------------------


class Caller:
    """One provider class, called with a short backoff and a 5 s read timeout."""

    def __init__(self, provider_class: type[Provider], model: str) -> None:
        self.provider_class = provider_class
        self.model = model

    def provider(self, **options: Any) -> Provider:
        return self.provider_class(**{"backoff": 0.01, "read_timeout": 5.0, **options})

    def ask(self, messages: list[Message] | None = None, tools: Iterable[ToolSpec] = (),
            system: str = "Be brief.") -> ModelRequest:
        return ModelRequest(model=self.model, system=system, messages=messages or [Message.user("Hi")],
                            tools=list(tools))

    def collect(self, request: ModelRequest, cancel: CancelToken | None = None, **options: Any) -> list[Any]:
        return list(self.provider(**options).stream(request, cancel or CancelToken()))

    def assert_cancel_stops_at_once(self, first: str) -> None:
        """With a server sending a chunk every 2 s: the first chunk arrives, then a cancel
        from another thread, while the stream waits, ends it with Interrupted before the
        next chunk is read."""
        cancel = CancelToken()
        stream = self.provider().stream(self.ask(), cancel)
        assert next(stream) == TextChunk(first)
        threading.Timer(0.1, cancel.cancel).start()
        after: list[Any] = []
        with pytest.raises(Interrupted):
            for chunk in stream:
                after.append(chunk)
        assert after == []


# -- a home with an agent that counts words ------------------------------------------------------


def counting_agent(rig: Any, name: str, model: str, hooks: Iterable[str] = ()) -> None:
    """Agent ``name`` on ``model`` with the word-count tool (and ``hooks``), and notes.txt
    (4 words)."""
    rig.write_tool("word-count", WORD_COUNT)
    (rig.workdir / "notes.txt").write_text("one two three four")
    write_agent(rig.home, name, ["word-count"], hooks, model, description="A test agent.", body="Be careful.")


# -- servers started as processes --------------------------------------------------------------------


@contextmanager
def server_process(name: str, command: list[str], ready_url: str, log_path: Path,
                   timeout: float) -> Iterator[None]:
    """Run ``command`` (server ``name``) until the block ends, once GET ``ready_url`` answers 200. Its output
    goes to ``log_path`` (a file: a full pipe would stall the server) and is quoted if it
    does not come up within ``timeout`` seconds."""
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while not _answers(ready_url):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{name} did not start: {log_path.read_text()[-2000:]}")
                time.sleep(0.2)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False
