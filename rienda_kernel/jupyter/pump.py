"""Keeping a plain ipykernel responsive while a magic blocks its main thread.

A magic runs on the kernel's main thread, so while an agent turn runs, ipykernel cannot
dispatch the widget clicks the turn may be waiting for (it would deadlock, whatever its
version). :class:`MainThreadPump` diverts ``comm_*`` messages arriving on the shell
channel thread to a queue, and the magic's main thread runs them, along with the jobs the
worker schedules (building widgets), until the turn ends. Every other message keeps its
place in line. Uses ipykernel internals (``shell_stream``, ``shell_channel_thread``,
``shell_channel_thread_main``, ``shell_handlers``, typed in :class:`PumpedKernel`):
ipykernel is pinned to ``>=7.4,<8`` and tests click through it.
"""

from __future__ import annotations

import os
import queue
import select
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import zmq

from .cell import KernelParts, message_session

if TYPE_CHECKING:
    from ipykernel.shellchannel import ShellChannelThread
    from zmq.eventloop.zmqstream import ZMQStream

    from ..engine import JSONObject

__all__ = ["MainThreadPump", "PumpedKernel"]

_COMM_TYPES = {"comm_open", "comm_msg", "comm_close"}
_Receiver = Callable[[list[zmq.Frame]], Awaitable[None]]  # what the shell stream hands each message


class PumpedKernel(KernelParts, Protocol):
    """What the pump needs of an ipykernel 7 kernel besides a cell's parts: its shell
    stream and channel thread, the handler that thread runs for each message, the shell
    handlers by message type, and setting the parent request."""

    shell_handlers: dict[str, Callable[[ZMQStream | None, list[bytes], JSONObject], object]]

    @property
    def shell_stream(self) -> ZMQStream | None: ...

    @property
    def shell_channel_thread(self) -> ShellChannelThread: ...

    async def shell_channel_thread_main(self, msg: list[zmq.Frame]) -> None: ...

    def set_parent(self, ident: list[bytes] | bytes | None, parent: JSONObject, channel: str = "shell") -> None: ...


class MainThreadPump:
    """``with MainThreadPump(kernel) as pump:`` then ``pump.run_until(done, on_interrupt)``
    (``done``: a turn's ``Future.done``, say)."""

    def __init__(self, kernel: PumpedKernel) -> None:
        self.kernel = kernel
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._diverting = False
        self._bell: tuple[int, int] | None = os.pipe()  # rung with each job, for a wait that watches a signal too
        self._bell_lock = threading.Lock()
        for fd in self._bell:
            os.set_blocking(fd, False)

    @staticmethod
    def supported(kernel: KernelParts) -> bool:
        """Whether ``kernel`` has the ipykernel 7 parts the pump relies on."""
        return all(getattr(kernel, name, None) is not None
                   for name in ("shell_stream", "shell_channel_thread", "shell_channel_thread_main", "shell_handlers"))

    def schedule(self, job: Callable[[], None]) -> None:
        """Run ``job`` on the main thread (from any thread)."""
        self._jobs.put(job)
        with self._bell_lock:  # never a write to a descriptor closed (and maybe reused) after the turn
            if self._bell is not None:
                try:
                    os.write(self._bell[1], b"x")
                except BlockingIOError:  # full of rings not read yet: it rang
                    pass

    def __enter__(self) -> MainThreadPump:
        self._set_receiver(self._divert)
        self._diverting = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._set_receiver(self.kernel.shell_channel_thread_main)
        self._diverting = False
        self._run_pending()
        with self._bell_lock:
            bell, self._bell = self._bell, None
        for fd in bell or ():
            os.close(fd)

    def run_until(self, done: Callable[[], bool], on_interrupt: Callable[[], None],
                  signalled: int | None = None) -> bool:
        """Run jobs until ``done()``; Ctrl-C calls ``on_interrupt`` and keeps waiting for
        the turn to wind down. Returns whether an interrupt happened. Whoever makes
        ``done()`` true then calls :meth:`wake`. The wait is on the job queue and on
        ``signalled`` (readable at every signal, whichever thread got it: the signal's
        handler then runs here): no polling."""
        interrupted = False
        while True:
            try:  # the check is inside: Ctrl-C may land on any bytecode of the loop
                if done():
                    break
                job = self._next(signalled)
                if job is not None:
                    self._run(job)
            except KeyboardInterrupt:
                interrupted = True
                on_interrupt()
        self._run_pending()
        return interrupted

    def wake(self) -> None:
        """Make :meth:`run_until` ask its ``done`` again (from any thread)."""
        self.schedule(_nothing)

    def _next(self, signalled: int | None) -> Callable[[], None] | None:
        """The next job, waiting for one; None when a signal woke the wait instead."""
        if signalled is None:
            return self._jobs.get()
        while True:
            try:
                return self._jobs.get_nowait()
            except queue.Empty:
                pass
            assert self._bell is not None  # closed only on leaving the pump, after its last wait
            ready, _, _ = select.select([self._bell[0], signalled], [], [])
            for fd in ready:
                drain(fd)
            if signalled in ready:
                return None

    # -- internals ---------------------------------------------------------------------------
    def _set_receiver(self, receiver: _Receiver) -> None:
        """Swap the shell stream's receive callback, on the shell channel thread."""
        installed = threading.Event()

        def swap() -> None:
            stream = self.kernel.shell_stream
            if stream is not None:  # supported() checked it
                stream.on_recv(receiver, copy=False)
            installed.set()

        self.kernel.shell_channel_thread.io_loop.add_callback(swap)
        installed.wait(5)

    async def _divert(self, msg: list[zmq.Frame]) -> None:
        """On the shell channel thread: comm messages to the queue, the rest as usual."""
        if self._diverting and self._msg_type(msg) in _COMM_TYPES:
            self.schedule(lambda: self._dispatch_comm(msg))  # rings the bell the wait watches
            return
        await self.kernel.shell_channel_thread_main(msg)

    def _msg_type(self, msg: list[zmq.Frame]) -> str | None:
        try:
            session = message_session(self.kernel)
            _, frames = session.feed_identities(msg, copy=False)
            msg_type = session.deserialize(frames, content=False, copy=False)["header"]["msg_type"]
        except Exception:  # noqa: BLE001 - a message we cannot read goes the usual way
            return None
        return msg_type if isinstance(msg_type, str) else None

    def _dispatch_comm(self, msg: list[zmq.Frame]) -> None:
        """Run a comm message's handler here, keeping the cell's parent for its output."""
        kernel, session = self.kernel, message_session(self.kernel)
        parent, ident = kernel.get_parent("shell"), kernel._get_shell_context_var(kernel._shell_parent_ident)
        idents, frames = session.feed_identities(msg, copy=False)
        message = session.deserialize(frames, content=True, copy=False)
        kernel.set_parent(idents, message, channel="shell")
        try:
            kernel.shell_handlers[message["header"]["msg_type"]](kernel.shell_stream, idents, message)
        finally:
            kernel.set_parent(ident, parent, channel="shell")

    def _run_pending(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            self._run(job)

    def _run(self, job: Callable[[], None]) -> None:
        """One job; one that fails (a comm handler, a display) is logged and the pump goes
        on, so the turn it serves still ends."""
        try:
            job()
        except Exception:  # noqa: BLE001 - KeyboardInterrupt passes: it is the user's stop
            self.kernel.log.exception("Rienda: a job on the kernel's thread failed")


def _nothing() -> None:
    """The job that only wakes the pump."""


def drain(fd: int) -> None:
    """Read a non-blocking wake-up descriptor empty (its bytes are only a nudge)."""
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
