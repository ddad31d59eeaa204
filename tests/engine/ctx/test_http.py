"""fetch against a real http.server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from rienda_kernel.engine.cancel import CancelToken
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine import http
from rienda_kernel.engine.ctx.http import FetchError, HttpResponse, fetch

from ...helpers.ports import free_port


class Server:
    """A threaded HTTP server with a few fixed routes; ``url(path)`` builds addresses."""

    def __init__(self) -> None:
        self.slow_entered = threading.Event()  # a /slow request has arrived
        self.release = threading.Event()  # lets /slow requests finish
        self.requests: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, address: None  # clients that gave up
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def url(self, path: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{path}"

    def __enter__(self) -> Server:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler_for(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _route(self) -> None:
            server.requests.append(f"{self.command} {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            received = self.rfile.read(length).decode("utf-8")
            if self.path == "/hello":
                self._send(200, b"hello", [("X-Test", "a"), ("Content-Type", "text/plain")])
            elif self.path == "/echo":
                echo = {"method": self.command, "headers": dict(self.headers.items()), "body": received}
                self._send(200, json.dumps(echo).encode(), [("Content-Type", "application/json")])
            elif self.path == "/missing":
                self._send(404, b"nothing here")
            elif self.path == "/cookies":
                self._send(200, b"", [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
            elif self.path == "/latin1":
                self._send(200, "café".encode("latin-1"), [("Content-Type", "text/plain; charset=iso-8859-1")])
            elif self.path == "/redirect":
                self._send(302, b"", [("Location", "/hello")])
            elif self.path == "/slow":
                server.slow_entered.set()
                server.release.wait()  # set by the test, or when the server closes
                self._send(200, b"finally")
            else:
                self._send(500, b"unknown route")

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _route

    return Handler


@pytest.fixture
def server():
    with Server() as running:
        yield running


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    return free_port()


def test_get_returns_status_headers_and_body(server):
    response = fetch(server.url("/hello"))
    assert response.status == 200
    assert response.body == "hello"
    assert response.headers["x-test"] == "a"
    assert all(name == name.lower() for name in response.headers)
    assert response.to_js() == {"status": 200, "headers": response.headers, "body": "hello"}


def test_post_sends_method_headers_and_body(server):
    response = fetch(server.url("/echo"), method="post", headers={"X-Token": "s3cret"}, body="ñandú")
    echo = json.loads(response.body)
    assert echo["method"] == "POST"
    assert echo["headers"]["X-Token"] == "s3cret"
    assert echo["body"] == "ñandú"


def test_other_methods(server):
    assert json.loads(fetch(server.url("/echo"), method="PUT", body="x").body)["method"] == "PUT"
    assert json.loads(fetch(server.url("/echo"), method="DELETE").body)["method"] == "DELETE"
    head = fetch(server.url("/hello"), method="HEAD")
    assert (head.status, head.body) == (200, "")


def test_non_2xx_is_a_normal_response(server):
    response = fetch(server.url("/missing"))
    assert (response.status, response.body) == (404, "nothing here")


def test_repeated_headers_are_joined(server):
    assert fetch(server.url("/cookies")).headers["set-cookie"] == "a=1, b=2"


def test_body_is_decoded_with_the_declared_charset(server):
    assert fetch(server.url("/latin1")).body == "café"


def test_redirects_are_followed(server):
    response = fetch(server.url("/redirect"))
    assert (response.status, response.body) == (200, "hello")
    assert server.requests == ["GET /redirect", "GET /hello"]


def test_an_injected_transport_serves_every_request_until_it_is_removed(server):
    seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(203, text="from the transport")

    http.use_transport(httpx.MockTransport(answer))
    try:
        response = fetch("http://nowhere.invalid/x")
    finally:
        http.use_transport(None)
    assert (response.status, response.body, seen) == (203, "from the transport", ["http://nowhere.invalid/x"])
    assert fetch(server.url("/hello")).body == "hello"  # the network again


def test_shared_client_is_created_once():
    clients = []
    threads = [threading.Thread(target=lambda: clients.append(http.client())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(client) for client in clients}) == 1


def test_connection_refused_names_the_url(closed_port):
    url = f"http://127.0.0.1:{closed_port}/x"
    with pytest.raises(FetchError) as caught:
        fetch(url)
    assert str(caught.value) == f"fetch {url} failed: connection refused"
    assert isinstance(caught.value, ConnectionError)
    assert caught.value.__cause__ is not None


@pytest.mark.parametrize("url", ["ftp://example.com/file", "no scheme at all", "http://[::1"])
def test_unusable_urls_raise_fetch_error(url):
    with pytest.raises(FetchError, match=re.escape(f"fetch {url} failed: ")):
        fetch(url)


def test_timeout_raises_fetch_error(server):
    url = server.url("/slow")
    with pytest.raises(FetchError, match=r"/slow failed: timed out after 200 ms"):
        fetch(url, timeout_ms=200)


def test_cancel_during_a_slow_response_interrupts_before_the_server_answers(server):
    """/slow answers only when the test releases it (at the end): the fetch must end on
    the cancel alone. bench/bench_cancel.py measures how long that takes."""
    token = CancelToken()
    outcome: dict[str, object] = {}

    def call() -> None:
        try:
            outcome["response"] = fetch(server.url("/slow"), cancel=token)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome["error"] = exc

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    assert server.slow_entered.wait(30), "the request never reached the server"
    token.cancel()
    worker.join(30)
    assert not worker.is_alive(), "fetch did not end on the cancel"
    assert isinstance(outcome.get("error"), Interrupted), outcome


def test_cancelled_token_sends_nothing(server):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Interrupted):
        fetch(server.url("/hello"), cancel=token)
    assert server.requests == []


def test_http_response_is_frozen():
    response = HttpResponse(status=200, headers={}, body="")
    with pytest.raises(AttributeError):
        response.status = 500  # type: ignore[misc]


def test_shared_client_keeps_no_cookies(server):
    fetch(server.url("/cookies"))
    echo = json.loads(fetch(server.url("/echo")).body)
    assert "Cookie" not in echo["headers"]
