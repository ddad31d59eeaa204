"""Every error a provider raises while it reads a stream names the endpoint's URL, as its
errors before the stream do (issue 33, docs/agents-and-models.md): a stream that ends
without its end marker, a malformed event, an error event, a connection broken mid-body;
for OpenAI, Anthropic and Ollama, against real HTTP servers on 127.0.0.1 speaking each
vendor's wire format. A secret in the URL (a password in its user info, a key in its query
string) is never shown."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from rienda_kernel.engine.errors import ProviderError
from rienda_kernel.engine.providers.anthropic import AnthropicProvider
from rienda_kernel.engine.providers.ollama import OllamaProvider
from rienda_kernel.engine.providers.openai import OpenAIProvider
from rienda_kernel.engine.secrets import scrub_url

from ...helpers.vendor_streams import anthropic as claude, ollama as llama, openai as gpt
from ...helpers.vendor_wire import Caller, serving
from ...helpers.vendors import fake_anthropic, fake_ollama, fake_openai

PASSWORD = "pw-hunter2-0123456789"
KEY = "query-key-0123456789abcdef"

_CLAUDE_ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
VENDORS = {
    # name: (server, caller, path, a stream cut before its end marker, a malformed event, an error event)
    "openai": (fake_openai, Caller(OpenAIProvider, "gpt-4o-mini"), "/chat/completions",  # after .../v1
               {"events": gpt.text_stream("partial")[:2], "done": False},
               {"events": [gpt.chunk({"content": "a"}), '{"id": "x", "choices": [{"delta": {"con']},
               {"events": [gpt.chunk({"content": "a"}), '{"error": {"message": "overloaded", "type": "server_error"}}']}),
    "anthropic": (fake_anthropic, Caller(AnthropicProvider, claude.MODEL), "/v1/messages",
                  {"events": claude.text_stream("partial")[:5]},
                  {"events": [claude.start(), '{"type": "content_block_delta", "index": 0, "delta": {"ty']},
                  {"events": [claude.start(), _CLAUDE_ERROR]}),
    "ollama": (fake_ollama, Caller(OllamaProvider, llama.MODEL), "/api/chat",
               {"events": [llama.part("par"), llama.part("tial")]},
               {"events": [llama.part("a"), '{"model": "qwen3", "message": {"con']},
               {"events": [llama.part("a"), {"error": "out of memory"}]}),
}
WHAT = {"cut": ("ended before", 3), "malformed": ("not JSON", 4), "error event": ("mid-stream", 5)}


def with_password(url: str) -> str:
    return url.replace("http://", f"http://rienda:{PASSWORD}@")


@pytest.mark.parametrize("what", WHAT)
@pytest.mark.parametrize("vendor", VENDORS)
def test_an_error_while_reading_the_stream_names_the_url(vendor, what):
    fake, caller, path, *replies = VENDORS[vendor]
    says, index = WHAT[what]
    with serving(fake()) as server:
        server.replies.append(replies[index - 3])
        base = with_password(server.url)
        with pytest.raises(ProviderError) as caught:
            caller.collect(caller.ask(), base_url=base, max_retries=0)
    message = str(caught.value)
    # Ollama's host URL keeps no user info (host_url, as the ollama package reads it)
    shown = (server.url if vendor == "ollama" else server.url.replace("http://", "http://rienda:[redacted]@")) + path
    assert message.startswith(shown + ": "), message
    assert says in message and PASSWORD not in message


@contextmanager
def breaking_server(content_type: str, first: bytes) -> Iterator[int]:
    """A server on 127.0.0.1 that answers one POST with 200, a chunked body's first chunk
    (``first``), then closes the connection mid-body; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)

    def serve() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.settimeout(30)
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            while len(body) < length:
                body += connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type.encode()
                               + b"\r\nTransfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(first) + first + b"\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        thread.join(timeout=30)


BROKEN = {
    "openai": (Caller(OpenAIProvider, "gpt-4o-mini"), "text/event-stream", b'data: {"choices": []}\n\n'),
    "anthropic": (Caller(AnthropicProvider, claude.MODEL), "text/event-stream", b'event: ping\ndata: {"type": "ping"}\n\n'),
    "ollama": (Caller(OllamaProvider, llama.MODEL), "application/x-ndjson", b'{"message": {"content": "a"}}\n'),
}


@pytest.mark.parametrize("vendor", BROKEN)
def test_a_connection_broken_mid_stream_names_the_url_without_the_key_in_its_query(vendor):
    caller, content_type, first = BROKEN[vendor]
    # the server answers one request: Ollama's window is given, so /api/show is not asked first
    window = {"options": {"num_ctx": 2048}} if vendor == "ollama" else {}
    with breaking_server(content_type, first) as port:
        base = f"http://127.0.0.1:{port}/v1?key={KEY}"
        with pytest.raises(ProviderError) as caught:
            caller.collect(caller.ask(), base_url=base, max_retries=0, **window)
    message = str(caught.value)
    assert message.startswith(f"http://127.0.0.1:{port}/"), message
    assert "the stream failed: the connection broke" in message and KEY not in message, message


def test_scrub_url_hides_secret_query_values_and_user_info_passwords():
    assert scrub_url(f"https://u:{PASSWORD}@h.example/v1?key={KEY}&mode=fast&access_token=abcdefgh1&x") == (
        "https://u:[redacted]@h.example/v1?key=[redacted]&mode=fast&access_token=[redacted]&x")
    assert scrub_url("http://127.0.0.1:11434/api/chat") == "http://127.0.0.1:11434/api/chat"
