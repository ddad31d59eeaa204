"""What the model providers add on top of reading the stream.

A server on 127.0.0.1 streams the same answer (N text pieces) in each vendor's format:
OpenAI's SSE, Anthropic's SSE and Ollama's NDJSON. Prints, for each provider:
- the time to the first text chunk, against httpx reading the first line of the same
  response (the baseline);
- the time for the whole answer and the cost per chunk above the baseline (httpx reading
  every line of the same response);
- how long a cancel takes to end a stream that waits for data (the server holds the rest
  of the answer back), and how long a retry waits for a ``Retry-After: 0.2``.

    python bench/bench_providers.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from rienda_kernel.engine import CancelToken
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine.sessions.messages import Message
from rienda_kernel.engine.providers import ModelRequest, TextChunk
from rienda_kernel.engine.providers.anthropic import AnthropicProvider
from rienda_kernel.engine.providers.ollama import OllamaProvider
from rienda_kernel.engine.providers.openai import OpenAIProvider


def openai_body(pieces: int) -> bytes:
    def line(delta: dict[str, Any], finish: str | None = None) -> str:
        return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
    return ("".join(line({"content": f"w{i} "}) for i in range(pieces)) + line({}, "stop") + "data: [DONE]\n\n").encode()


def anthropic_body(pieces: int) -> bytes:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"
    head = event({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                       "model": "m", "usage": {"input_tokens": 5, "output_tokens": 1}}})
    head += event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    body = "".join(event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"w{i} "}})
                   for i in range(pieces))
    tail = event({"type": "content_block_stop", "index": 0})
    tail += event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": pieces}})
    return (head + body + tail + event({"type": "message_stop"})).encode()


def ollama_body(pieces: int) -> bytes:
    lines = [{"model": "m", "message": {"role": "assistant", "content": f"w{i} "}, "done": False} for i in range(pieces)]
    lines.append({"model": "m", "message": {"role": "assistant", "content": ""}, "done": True,
                  "done_reason": "stop", "prompt_eval_count": 5, "eval_count": pieces})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


class StreamServer:
    """Serves each path's body: the first line, a flush, then (after ``stall`` seconds)
    the rest. A path in ``busy`` answers 429 with ``Retry-After: 0.2`` every other time."""

    def __init__(self, bodies: dict[str, bytes], stall: float = 0.0, busy: tuple[str, ...] = ()) -> None:
        turns = {path: 0 for path in busy}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()  # no Nagle: the first line leaves at once, as a vendor's would
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                if self.path in turns:
                    turns[self.path] += 1
                    if turns[self.path] % 2:
                        self.send_response(429)
                        self.send_header("Retry-After", "0.2")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                body = bodies[self.path]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                # the first line (the baseline's first item); with a stall, the first whole event
                first = body.index(b"\n\n") + 2 if stall else body.index(b"\n") + 1
                self.wfile.write(body[:first])
                self.wfile.flush()
                if stall:
                    time.sleep(stall)
                self.wfile.write(body[first:])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def baseline(client: httpx.Client, url: str) -> tuple[float, float]:
    """Seconds to the first line and to the end, reading with httpx alone (a client kept
    between requests, as the providers keep theirs)."""
    started = time.perf_counter()
    first = None
    with client.stream("POST", url, json={"model": "m"}) as response:
        for _ in response.iter_lines():
            if first is None:
                first = time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


def through(provider: Any) -> tuple[float, float]:
    """Seconds to the first text chunk and to the end, through the provider."""
    request = ModelRequest("m", "", [Message.user("hi")])
    started = time.perf_counter()
    first = None
    for chunk in provider.stream(request, CancelToken()):
        if first is None and isinstance(chunk, TextChunk):
            first = time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


def cancel_latency(provider: Any) -> float:
    """Seconds from ``cancel()`` (on another thread) to Interrupted, while the stream waits
    for data the server holds back."""
    cancel = CancelToken()
    stream = provider.stream(ModelRequest("m", "", [Message.user("hi")]), cancel)
    next(stream)  # the first piece; the rest comes only after the server's stall
    cancelled_at: list[float] = []
    timer = threading.Timer(0.05, lambda: (cancelled_at.append(time.perf_counter()), cancel.cancel()))
    timer.start()
    try:
        for _ in stream:
            pass
    except Interrupted:
        return time.perf_counter() - cancelled_at[0]
    raise SystemExit("the stream ended without being interrupted")


def retry_wait(provider: Any) -> float:
    """Seconds a request takes whose first attempt gets 429 with Retry-After: 0.2."""
    started = time.perf_counter()
    list(provider.stream(ModelRequest("m", "", [Message.user("hi")]), CancelToken()))
    return time.perf_counter() - started


def summary(figures: list[float]) -> str:
    ordered = sorted(figures)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(figures):7.2f} ms   p95 {p95:7.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (CI smoke run)")
    args = parser.parse_args()
    pieces, runs = (500, 5) if args.quick else (2000, 20)
    server = StreamServer({"/v1/chat/completions": openai_body(pieces), "/v1/messages": anthropic_body(pieces),
                           "/api/chat": ollama_body(pieces)})
    cases = [
        ("openai", "/v1/chat/completions", OpenAIProvider(server.origin + "/v1", None)),
        ("anthropic", "/v1/messages", AnthropicProvider(server.origin, None)),
        ("ollama", "/api/chat", OllamaProvider(server.origin, None)),
    ]
    print(f"Streaming a {pieces}-piece answer from 127.0.0.1 ({runs} runs each)")
    client = httpx.Client()
    for name, path, provider in cases:
        through(provider)  # warm-up
        baseline(client, server.origin + path)
        base = [baseline(client, server.origin + path) for _ in range(runs)]
        mine = [through(provider) for _ in range(runs)]
        first_base, first_mine = [b[0] * 1000 for b in base], [m[0] * 1000 for m in mine]
        all_base, all_mine = [b[1] * 1000 for b in base], [m[1] * 1000 for m in mine]
        per_chunk = (statistics.median(all_mine) - statistics.median(all_base)) * 1000 / pieces
        print(f"  {name}")
        print(f"    first text chunk   {summary(first_mine)}   httpx first line (baseline) {summary(first_base)}")
        print(f"    whole answer       {summary(all_mine)}   httpx every line (baseline) {summary(all_base)}")
        print(f"    {statistics.median(all_mine) / statistics.median(all_base):.1f}x the baseline; "
              f"{per_chunk:.1f} µs per chunk above it")
    stalled = StreamServer({"/v1/chat/completions": openai_body(10)}, stall=2.0)
    cancels = [cancel_latency(OpenAIProvider(stalled.origin + "/v1", None)) * 1000 for _ in range(max(3, runs // 4))]
    print(f"  cancel while the stream waits for data: {summary(cancels)} from cancel() to Interrupted")
    busy = StreamServer({"/v1/chat/completions": openai_body(10)}, busy=("/v1/chat/completions",))
    waits = [retry_wait(OpenAIProvider(busy.origin + "/v1", None)) * 1000 for _ in range(3)]
    print(f"  a 429 with Retry-After: 0.2, then the answer: {summary(waits)} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
