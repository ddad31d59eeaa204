"""A real HTTP server on 127.0.0.1 that replays a vendor's wire format.

Each vendor's tests build one with that vendor's framing and validators: every request body
it receives and every event it serves passes through the official package's types
(``openai``, ``anthropic``, ``ollama``), so the fixtures are the vendor's format, not ours.
A validation failure is recorded in ``problems``; the ``server`` fixtures assert it stays
empty.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
    ``{"status": 429, "headers": {...}, "body": {...}}`` for an error. Events that are dicts
    are validated with ``validate_event`` and framed with ``encode``; strings are sent as
    ``encode_raw`` frames them (for garbled data). ``trailer`` follows the events unless the
    reply says ``"done": False`` (a stream cut short).
    """

    def __init__(self, path: str, content_type: str, *, encode: Callable[[dict[str, Any]], str],
                 encode_raw: Callable[[str], str], validate_request: Callable[[dict[str, Any]], None],
                 validate_event: Callable[[dict[str, Any]], None], trailer: str = "") -> None:
        self.path = path
        self.content_type = content_type
        self.encode = encode
        self.encode_raw = encode_raw
        self.validate_request = validate_request
        self.validate_event = validate_event
        self.trailer = trailer
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.problems: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                if self.path != fake.path:
                    fake.problems.append(f"wrong path {self.path}")
                try:
                    fake.validate_request(body)
                except Exception as exc:  # the request is not in the vendor's format
                    fake.problems.append(f"request: {exc}")
                reply = fake.replies.pop(0) if fake.replies else {"status": 500, "body": {"error": {"message": "no reply"}}}
                try:
                    fake.serve(self, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler

    def serve(self, handler: BaseHTTPRequestHandler, reply: dict[str, Any]) -> None:
        status = reply.get("status", 200)
        if status != 200:
            payload = json.dumps(reply.get("body", {})).encode()
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

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
