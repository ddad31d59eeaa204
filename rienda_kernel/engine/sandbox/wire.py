"""What crosses the sandbox's boundaries: text out of V8, host replies, worker messages.

Three small contracts, shared by the in-process bridge (``isolate.py``) and the worker
processes (``worker_main.py``, ``worker_handle.py``); standard library only, so the host process
never loads V8 to use them:

- :func:`from_v8` is the one place JSON text that came out of V8 becomes Python values:
  lone surrogates are repaired (:func:`..common.text.repair`), and a value nested deeper than
  :data:`..common.bounded.MAX_DEPTH` (the engine's one bound on nesting) is refused (Python's own JSON reader and writer would fail on it later,
  somewhere in the run).
- :func:`host_reply` runs one host call and encodes its value, or its exception as
  ``{name, message}`` (the JS ``Error`` the extension sees is named after the Python class).
- :class:`Channel` carries length-prefixed JSON messages over a stream socket, and
  :func:`encode_error` / :func:`decode_error` carry Rienda's sandbox errors across it.
"""

from __future__ import annotations

import json
import re
import socket
import struct
from collections.abc import Iterable

from ..errors import ExtensionError, Interrupted, OutOfMemory, SandboxError, ScriptError
from ..common.bounded import MAX_DEPTH
from ..common.json_value import JSON, JSONObject
from ..common.text import repair
from .protocol import HostHandler, JSValue

__all__ = [
    "Channel",
    "ChannelClosed",
    "HostReplyError",
    "RawReply",
    "decode_error",
    "decode_outcome",
    "encode_error",
    "encode_outcome",
    "from_v8",
    "host_reply",
]

# A surrogate escaped by JSON.stringify (lone ones are), or a raw one.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_HEADER = struct.Struct("!I")


def from_v8(text: str) -> JSON:
    """Decode JSON text from V8: surrogates repaired, nesting bounded.

    Raises :class:`SandboxError` for a value nested deeper than :data:`MAX_DEPTH`.
    V8's ``JSON.stringify`` escapes lone surrogates (``\\ud83d``), so well-formed text is
    the common case and costs one regex scan.
    """
    try:
        value = json.loads(text)
    except RecursionError:  # from None: chained, the cause would keep thousands of frames alive
        raise _too_deep() from None
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise _too_deep()
    if _SURROGATE.search(text):
        value = repair(value)
    return value


def _too_deep() -> SandboxError:
    return SandboxError(f"the value is nested more than {MAX_DEPTH} levels deep")


def _deeper_than(value: JSON, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[JSON] = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


class RawReply(str):
    """A host reply already encoded as ``{"value": ...}`` or ``{"error": ...}`` text."""


class HostReplyError(Exception):
    """A host call failed elsewhere (the parent process); ``name`` is the class it had there."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def host_reply(host: HostHandler, op: str, args: JSON) -> RawReply:
    """Run ``host(op, args)``; its value, or its exception (an ``Exception``: a
    KeyboardInterrupt is the caller's), as reply text."""
    try:
        value = host(op, args)
        if isinstance(value, RawReply):
            return value
        return RawReply(json.dumps({"value": value}, ensure_ascii=False))
    except Exception as exc:  # noqa: BLE001 - every host failure becomes a JS Error
        return error_reply(exc)


def error_reply(exc: BaseException) -> RawReply:
    """``exc`` as a host call's reply; ``stopped`` when it says the run was stopped (the
    worker then ends its job there, before the stop on the control channel reaches it)."""
    name = exc.name if isinstance(exc, HostReplyError) else type(exc).__name__
    message = str(exc) or name
    error: JSONObject = {"name": name, "message": message}
    if isinstance(exc, Interrupted):
        error["stopped"] = True
    return RawReply(json.dumps({"error": error}, ensure_ascii=False))


def says_stopped(reply: RawReply) -> bool:
    """Whether a host call's reply is :func:`error_reply`'s for a stopped run."""
    if not reply.startswith('{"error"'):
        return False
    error = json.loads(reply).get("error")
    return isinstance(error, dict) and error.get("stopped") is True


# -- errors across the process boundary ------------------------------------------------
def encode_error(exc: BaseException) -> JSONObject:
    """A JSON form of a sandbox error (anything else becomes a SandboxError naming it)."""
    if isinstance(exc, ScriptError):
        return {"type": "ScriptError", "message": exc.args[0], "name": exc.name, "location": exc.location}
    if isinstance(exc, ExtensionError):
        return {"type": "ExtensionError", "message": str(exc), "path": exc.path, "line": exc.line}
    for kind in (OutOfMemory, Interrupted, SandboxError):
        if isinstance(exc, kind):
            return {"type": kind.__name__, "message": str(exc)}
    return {"type": "SandboxError", "message": f"internal error in the V8 worker: {type(exc).__name__}: {exc}"}


def decode_error(data: JSONObject) -> Exception:
    kind, message = data.get("type"), str(data.get("message", ""))
    if kind == "ScriptError":
        return ScriptError(message, name=data.get("name") or "Error", location=data.get("location"))
    if kind == "ExtensionError":
        return ExtensionError(message, path=data.get("path"), line=data.get("line"))
    if kind == "OutOfMemory":
        return OutOfMemory(message)
    if kind == "Interrupted":
        return Interrupted(message)
    return SandboxError(message)


def encode_outcome(outcome: JSValue | SandboxError) -> JSONObject:
    """A chain step's outcome (a protocol.JSValue, or the error it failed with) as JSON."""
    if isinstance(outcome, SandboxError):
        return {"error": encode_error(outcome)}
    return {"value": [outcome.kind, outcome.value]}


def decode_outcome(data: JSONObject) -> JSValue | SandboxError:
    """What :func:`encode_outcome` made (an error that is not a sandbox's: a SandboxError saying it)."""
    if "error" in data:
        error = decode_error(data["error"])
        return error if isinstance(error, SandboxError) else SandboxError(str(error))
    kind, value = data["value"]
    return JSValue(kind, value)


# -- framing -------------------------------------------------------------------------
class ChannelClosed(Exception):
    """The other end of a :class:`Channel` is gone."""


class Channel:
    """Length-prefixed JSON messages over a connected stream socket (one reader at a time,
    one writer at a time).

    :meth:`send_all` writes several messages in one system call (the reader then takes the
    later ones without waiting, or being woken, again); the reader reads up to
    :data:`READ_SIZE` of what has arrived in one call and keeps what follows the message it
    returns (:attr:`buffered`); a larger message is read into a buffer of its own size.
    """

    READ_SIZE = 64 * 1024

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._pending = bytearray()

    @property
    def buffered(self) -> bool:
        """Whether bytes already read wait for the next :meth:`receive`."""
        return bool(self._pending)

    def send(self, message: object) -> None:
        """``message`` (any value ``json.dumps`` takes) as one frame."""
        self.send_all([message])

    def send_all(self, messages: list[object]) -> None:
        frames: list[bytes] = []
        for message in messages:
            data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            frames += (_HEADER.pack(len(data)), data)
        try:
            self.sock.sendall(b"".join(frames))
        except OSError as exc:
            raise ChannelClosed(str(exc)) from exc

    def receive(self) -> JSON:
        while len(self._pending) < _HEADER.size:
            self._pending += self._recv(self.READ_SIZE)
        end = _HEADER.size + _HEADER.unpack_from(self._pending)[0]
        if len(self._pending) >= end:  # all here: a small message (what one read takes)
            data = self._pending[_HEADER.size:end]
            del self._pending[:end]
            return json.loads(data)
        # A large one: read into a buffer of its size, exactly (no copy beyond it: a reply
        # of 24 MB must fit in a worker's bound), and nothing that follows it.
        data = bytearray(end - _HEADER.size)
        got = len(self._pending) - _HEADER.size
        data[:got] = self._pending[_HEADER.size:]
        self._pending.clear()
        view = memoryview(data)
        while got < len(data):
            try:
                n = self.sock.recv_into(view[got:])
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            if n == 0:
                raise ChannelClosed("closed")
            got += n
        view.release()
        return json.loads(data)

    def _recv(self, size: int) -> bytes:
        try:
            chunk = self.sock.recv(size)
        except OSError as exc:
            raise ChannelClosed(str(exc)) from exc
        if not chunk:
            raise ChannelClosed("closed")
        return chunk

    def close(self) -> None:
        self.sock.close()
