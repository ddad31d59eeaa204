"""Where one cell's output goes: the kernel's IOPub and stdin, always with the cell's parent.

Events arrive from worker and isolate threads, where ipykernel's idea of "the current
cell" is not reliable (a widget click changes it), so a :class:`CellTarget` captures the
execute request once, when the cell starts, and sends everything with it. This module and
``pump.py`` are the only places that use ipykernel's private attributes; each use
is named in :meth:`CellTarget.of_cell`'s docstring (ipykernel is pinned ``>=7.4,<8``), and
what a kernel must have is typed once, here (:class:`KernelParts`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Protocol, TypeVar

import zmq
from jupyter_client.session import Session

from ..engine import JSONObject
from ..frontend.output import Reader

__all__ = ["READER", "CellTarget", "KernelParts", "message_session", "sender_session"]

_T = TypeVar("_T")

# What the notebook's reader is shown: paths relative to the folder the kernel (or the
# magics) started in, the notebook's.
READER = Reader()

_POLL = 0.05  # seconds between checks of ``until`` while waiting for an input reply


class KernelParts(Protocol):
    """What a cell's output needs of an ipykernel kernel (``ipykernel.kernelbase.Kernel``:
    the Rienda kernel, or the kernel a magic's shell runs in), typed here where ipykernel
    leaves it untyped: the request being handled, the message session, the IOPub and
    stdin sockets (ipykernel's ``iopub_socket`` stands for a zmq socket), the log."""

    log: logging.Logger
    iopub_socket: zmq.Socket[bytes]
    stdin_socket: zmq.Socket[bytes]
    _shell_parent_ident: ContextVar[bytes]

    @property
    def session(self) -> Session | None: ...

    def get_parent(self, channel: str) -> JSONObject: ...

    def _get_shell_context_var(self, var: ContextVar[_T]) -> _T: ...

    def _topic(self, topic: str) -> bytes: ...


def message_session(kernel: KernelParts) -> Session:
    """``kernel``'s message session, which its application sets before any request."""
    if kernel.session is None:
        raise RuntimeError("the kernel has no message session")
    return kernel.session


class CellTarget:
    """One cell's output channels and what its execute request said.

    ``schedule(fn)`` runs ``fn`` on the kernel's thread in the cell's context (widgets are
    made there); ``allow_stdin`` is the request's own flag (false for nbclient, nbval,
    papermill); ``client`` is its ``header.session``: one id per front-end connection,
    carried by every message that front end sends.
    """

    def __init__(self, kernel: KernelParts, parent: JSONObject, ident: bytes | None,
                 schedule: Callable[[Callable[[], None]], None], allow_stdin: bool) -> None:
        self.kernel = kernel
        self.session = message_session(kernel)
        self.parent = parent
        self.ident = ident
        self.schedule = schedule
        self.allow_stdin = allow_stdin
        self.client: str = parent.get("header", {}).get("session", "")
        self._lock = threading.Lock()

    @classmethod
    def of_cell(cls, kernel: KernelParts, schedule: Callable[[Callable[[], None]], None],
                allow_stdin: bool | None = None) -> CellTarget:
        """The running cell's target, read on the kernel's thread while the cell starts.

        Private ipykernel state used: ``_get_shell_context_var(_shell_parent_ident)`` (the
        stdin routing identity of the request) and ``_allow_stdin`` (the request's flag,
        when ``allow_stdin`` is not given).
        """
        ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
        if allow_stdin is None:
            allow_stdin = bool(getattr(kernel, "_allow_stdin", False))
        return cls(kernel, kernel.get_parent("shell"), ident, schedule, allow_stdin)

    @classmethod
    def of_request(cls, kernel: KernelParts) -> CellTarget:
        """The request being handled now, outside a cell: its output sent at once, and
        no one asked (an error reply to a request that never became a cell)."""
        return cls(kernel, kernel.get_parent("shell"), None, lambda fn: fn(), False)

    # -- IOPub --------------------------------------------------------------------------
    def send(self, msg_type: str, content: JSONObject) -> None:
        """One IOPub message with the cell's parent (ipykernel's ``_topic`` names it). The
        one way a cell's output leaves: its content passes the reader (no secret, paths
        as the notebook's reader sees them), and a message that cannot be sent is logged,
        never raised into the run."""
        content = READER.value(content)
        try:
            with self._lock:
                self.session.send(self.kernel.iopub_socket, msg_type, content, parent=self.parent,
                                  ident=self.kernel._topic(msg_type))
        except Exception:  # noqa: BLE001 - a display that fails must not fail the turn
            self.kernel.log.exception("Rienda: could not send a %s message", msg_type)

    def stream(self, name: str, text: str) -> None:
        self.send("stream", {"name": name, "text": text})

    def display(self, display_id: str, data: dict[str, str], update: bool = False) -> None:
        self.send("update_display_data" if update else "display_data",
                  {"data": data, "metadata": {}, "transient": {"display_id": display_id}})

    # -- stdin --------------------------------------------------------------------------
    def input_line(self, prompt: str, until: Callable[[], bool]) -> str | None:
        """One ``input_request`` and its reply's value; None once ``until()`` is true.

        Replies still queued from an earlier request (a prompt whose answer came too late)
        are dropped first, and a reply naming another request as its parent is ignored:
        a late answer never answers this request.
        """
        socket = self.kernel.stdin_socket
        while socket.poll(0):
            socket.recv_multipart(zmq.NOBLOCK)
        request = self.session.send(socket, "input_request", {"prompt": READER.text(prompt), "password": False},
                                    self.parent, ident=self.ident)
        if request is None:  # a session that cannot send (in a forked process): nobody was asked
            return None
        asked = request["header"]["msg_id"]
        while not until():
            if not socket.poll(int(_POLL * 1000)):
                continue
            _, reply = self.session.recv(socket)
            if reply is None:
                continue
            answered = reply.get("parent_header", {}).get("msg_id")
            if answered and answered != asked:
                continue
            return str(reply["content"].get("value", ""))
        return None


def sender_session(kernel: KernelParts) -> str | None:
    """The ``header.session`` of the shell message being handled now (on the kernel's
    thread, inside a comm handler): which front end sent it."""
    try:
        session = kernel.get_parent("shell").get("header", {}).get("session")
    except LookupError:
        return None
    return session if isinstance(session, str) else None
