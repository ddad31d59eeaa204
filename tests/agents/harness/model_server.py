"""A scripted fake model server on 127.0.0.1 (an ephemeral port), owned by one test.

It speaks three wires on one port, chosen by path: Anthropic's Messages API
(``POST …/messages``, plus ``HEAD /``), OpenAI's Responses API (``POST …/responses``) and
Gemini's ``…:streamGenerateContent`` / ``…:generateContent``. The script is the same on all:
a request that offers a shell tool and holds no tool result yet is answered with one call of
that tool running ``command``; any other request (a tool result is in the conversation, or
no shell tool is offered) gets ``final_text``. Every request is recorded, so a test can read
what the agent sent, e.g. the tool result the model read after a hook's deny.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any

from . import anthropic_wire, gemini_wire, responses_wire

MODEL = "fake-model"


@dataclass
class Exchange:
    """One request the server got and what kind of answer it gave (``tool``, ``text``, ``other``)."""

    method: str
    path: str
    body: dict[str, Any]
    wire: str = ""
    answer: str = "other"
    results: list[str] = field(default_factory=list)


class FakeModelServer:
    """The server; use as a context manager (it serves on a thread until closed)."""

    def __init__(self, command: str, final_text: str = "All done.") -> None:
        self.command = command
        self.final_text = final_text
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._calls = 0
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="fake-model", daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash, no version path)."""
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def __enter__(self) -> "FakeModelServer":
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)

    def tool_results(self) -> list[str]:
        """The distinct tool results the model was shown, in the order first seen."""
        seen: list[str] = []
        for exchange in list(self.exchanges):
            seen += [r for r in exchange.results if r not in seen]
        return seen

    def tool_calls_sent(self) -> int:
        """How many answers held a tool call."""
        return sum(e.answer == "tool" for e in self.exchanges)

    def describe(self) -> str:
        """One line per request, for an assertion's message."""
        return "\n".join(f"    {e.method} {e.path} -> {e.answer} results={e.results!r}"[:600] for e in self.exchanges)

    def answer(self, wire: ModuleType, exchange: Exchange) -> bytes:
        """The scripted answer to one model request on ``wire``, recorded on ``exchange``."""
        exchange.results = wire.tool_results(exchange.body)
        offers_shell = bool(set(wire.tool_names(exchange.body)) & {"Bash", "bash", "shell", "exec_command",
                                                                   "run_shell_command", "powershell"})
        if exchange.results or not offers_shell:
            exchange.answer = "text"
            return wire.text_stream(MODEL, self.final_text)
        with self._lock:
            self._calls += 1
            call_id = f"call_fake{self._calls:04d}"
        name, arguments = wire.shell_call(exchange.body, self.command)
        exchange.answer = "tool"
        return wire.tool_use_stream(MODEL, call_id, name, arguments)


WIRES = {"anthropic": anthropic_wire, "responses": responses_wire, "gemini": gemini_wire}


def _wire_of(path: str) -> str:
    route = path.split("?", 1)[0]
    if route.endswith("/messages"):
        return "anthropic"
    if route.endswith("/responses"):
        return "responses"
    if ":streamGenerateContent" in route or ":generateContent" in route:
        return "gemini"
    return ""


def _handler_for(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            """Quiet: the exchanges are recorded instead."""

        def do_HEAD(self) -> None:
            server.exchanges.append(Exchange("HEAD", self.path, {}))
            self._send(200, b"", "text/plain")

        def do_GET(self) -> None:
            server.exchanges.append(Exchange("GET", self.path, {}))
            self._send(404, b'{"error": {"message": "not served by the fake model"}}', "application/json")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode(errors="replace")}
            exchange = Exchange("POST", self.path, body if isinstance(body, dict) else {"json": body})
            server.exchanges.append(exchange)
            self._route(exchange)

        def _route(self, exchange: Exchange) -> None:
            exchange.wire = _wire_of(self.path)
            if ":countTokens" in self.path or self.path.split("?")[0].endswith("/count_tokens"):
                self._send(200, b'{"totalTokens": 10, "input_tokens": 10}', "application/json")
            elif not exchange.wire:
                self._send(404, b'{"error": {"message": "not served by the fake model"}}', "application/json")
            elif ":generateContent" in self.path:
                exchange.answer = "text"
                self._send(200, gemini_wire.text_json(MODEL, server.final_text), "application/json")
            else:
                self._send(200, server.answer(WIRES[exchange.wire], exchange), "text/event-stream")

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

    return Handler
