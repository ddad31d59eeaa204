"""Real kernels started through jupyter_client, and clients that behave like the front ends
people use:

- :class:`JupyterLab`: opens ``jupyter.widget.control`` when it connects (and asks for the
  widget states, as its widget manager does), renders widget views and reports them
  (``_view_count``), answers input requests when asked to;
- :class:`VSCode`: sends ``allow_stdin``, renders widget views and reports them, never
  opens the control comm;
- :class:`Console` (``jupyter console``): no widgets at all; answers input requests,
  without a parent header, as jupyter_console does;
- a batch runner (nbclient, nbval, papermill) is any of them sending ``allow_stdin=False``.

A reader thread takes every IOPub message as it arrives (a front end does not wait for
the test to ask), lets the widget manager act on it, and queues it for the test. The
functions below read what a front end received (texts, streams, buttons, confirm records)
or run a cell and read its value (:func:`outputs`, :func:`value_of`).
"""

from __future__ import annotations

import os
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class Frontend:
    """A started kernel and a client; subclasses say what the front end renders."""

    renders_widgets = False
    opens_control_comm = False
    holds_views = False

    def __init__(self, home: Path, workdir: Path, env: dict[str, str], kernel_name: str = "rienda",
                 attach_to: Frontend | None = None):
        """Starts a kernel, or (``attach_to``) connects to another front end's kernel as a
        second client, with a session id of its own."""
        self.home, self.workdir = home, workdir
        self._owns_kernel = attach_to is None
        self._stderr: IO[bytes] | None = None
        if attach_to is None:
            self.km, self.kc, self._stderr = _started(kernel_name, workdir, {**os.environ, "RIENDA_HOME": str(home), **env})
        else:
            self.km = attach_to.km
            ours = self.km.session
            self.kc = self.km.client(session=Session(key=ours.key, signature_scheme=ours.signature_scheme))
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=60)
        self.session_id = self.kc.session.session
        self.widgets = WidgetManager(self) if self.renders_widgets else None
        self._iopub: queue.Queue[dict[str, Any]] = queue.Queue()
        self.others: list[dict[str, Any]] = []  # IOPub messages of other parents (e.g. a click's updates)
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_iopub, name="frontend-iopub", daemon=True)
        self._reader.start()
        if self.opens_control_comm:
            self.widgets.open_control_comm()

    def disconnect(self) -> None:
        """Stop reading, then close this client's channels (the kernel goes on), as a front
        end does when its page closes; the reader never polls a closed socket."""
        self._stop.set()
        self._reader.join(5)
        if self.widgets is not None:
            self.widgets.close()
        if self.kc.channels_running:
            self.kc.stop_channels()

    def close(self) -> None:
        self.disconnect()
        if self._owns_kernel:
            self.km.shutdown_kernel(now=True)
            _echo(self._stderr)

    def _read_iopub(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.kc.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                continue
            if self.widgets is not None:
                self.widgets.on_iopub(msg)
            self._iopub.put(msg)

    # -- shell -------------------------------------------------------------------------
    def submit(self, code: str, allow_stdin: bool = False, **kwargs: Any) -> str:
        return self.kc.execute(code, allow_stdin=allow_stdin, **kwargs)

    def collect(self, msg_id: str, timeout: float = 60, until=None) -> list[dict[str, Any]]:
        """IOPub messages of ``msg_id`` until the kernel is idle (or ``until(msg)`` is true)."""
        deadline = time.monotonic() + timeout
        messages: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                msg = self._iopub.get(timeout=0.2)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                self.others.append(msg)
                continue
            messages.append(msg)
            if until is not None and until(msg):
                return messages
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages
        raise AssertionError(f"no idle within {timeout}s; got {[m['msg_type'] for m in messages]}")

    def run(self, code: str, **kwargs) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        msg_id = self.submit(code, **kwargs)
        messages = self.collect(msg_id)
        return self.reply(msg_id), messages

    def reply(self, msg_id: str, timeout: float = 30) -> dict[str, Any]:
        while True:
            msg = self.kc.get_shell_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]

    # -- stdin -------------------------------------------------------------------------
    def input_request(self, timeout: float = 30) -> dict[str, Any]:
        request = self.kc.get_stdin_msg(timeout=timeout)
        assert request["msg_type"] == "input_request", request
        return request

    def answer(self, value: str, request: dict[str, Any] | None = None) -> None:
        """An input_reply; with ``request`` as its parent (JupyterLab), else none (console)."""
        msg = self.kc.session.msg("input_reply", {"value": value}, parent=request or {})
        self.kc.stdin_channel.send(msg)

    def no_input_request(self) -> bool:
        """Whether no input request is waiting on the stdin channel now."""
        return not self.kc.stdin_channel.msg_ready()

    # -- widgets -----------------------------------------------------------------------
    def click(self, comm_id: str) -> None:
        """What a widget manager sends when a button is clicked."""
        self.widgets.send("comm_msg", {"comm_id": comm_id, "data": {"method": "custom",
                                                                    "content": {"event": "click"}}})


def _started(kernel_name: str, workdir: Path, env: dict[str, str]) -> tuple[KernelManager, Any, IO[bytes]]:
    """A kernel started and ready, its client's channels running, and the file its stderr
    goes to. jupyter_client picks free TCP ports before the kernel binds them, so another
    process (an xdist worker starting a kernel too) may take one meanwhile: a kernel that
    died of ``Address already in use`` is started again on new ports, up to three times;
    any other death fails as it is, its stderr shown."""
    attempts = 1
    while True:
        stderr = tempfile.TemporaryFile()
        km = KernelManager(kernel_name=kernel_name)
        km.start_kernel(cwd=str(workdir), env=env, stderr=stderr)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            return km, kc, stderr
        except RuntimeError:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            if "Address already in use" not in _echo(stderr) or attempts == 3:
                raise
            attempts += 1


def _echo(stderr: IO[bytes] | None) -> str:
    """What a kernel wrote to stderr, written to this process's stderr (pytest shows it
    with a failure) and returned; the file closed."""
    if stderr is None:
        return ""
    stderr.seek(0)
    said = stderr.read().decode("utf-8", "replace")
    stderr.close()
    sys.stderr.write(said)
    return said


class JupyterLab(Frontend):
    renders_widgets = True
    opens_control_comm = True


class VSCode(Frontend):
    renders_widgets = True


class Console(Frontend):
    pass


class BackgroundTab(JupyterLab):
    """JupyterLab whose views report only when :meth:`WidgetManager.release_views` is
    called (a slow or hidden page): the kernel cannot tell it from a console meanwhile."""

    holds_views = True


class WidgetManager:
    """What a real widget manager does with a kernel's widgets: keeps each model's state,
    and when a display shows a model's view, displays its views and children's views,
    raising ``_view_count`` where the kernel counts views (and lowering it when the display
    is replaced), as ipywidgets' ``WidgetView`` does. Sends on its own shell socket with
    the front end's session id, so the kernel sees the same client."""

    def __init__(self, frontend: Frontend) -> None:
        self.session = frontend.kc.session
        # Its own socket (a socket is not shared between threads), with another routing
        # identity; its messages still carry the front end's header.session.
        self.socket = frontend.km.connect_shell(identity=f"{self.session.session}-widgets".encode())
        self.models: dict[str, dict[str, Any]] = {}
        self.views: dict[str, str] = {}  # display_id -> the model id it shows
        self.held: list[dict[str, Any]] | None = [] if frontend.holds_views else None
        self.control: dict[str, Any] | None = None  # the control comm's answer, once it came
        self.control_answered = threading.Event()
        self._lock = threading.Lock()

    def close(self) -> None:
        self.socket.close(linger=0)

    def send(self, msg_type: str, content: dict[str, Any], **kwargs: Any) -> None:
        with self._lock:
            self.session.send(self.socket, msg_type, content, **kwargs)

    def open_control_comm(self, timeout: float = 30) -> None:
        """What JupyterLab's widget manager does on connecting: open the control comm and
        ask for the widget states; waits for the answer (states, or the comm refused)."""
        self.send("comm_open", {"comm_id": "control-1", "target_name": "jupyter.widget.control", "data": {}},
                  metadata={"version": "1.0.0"})
        self.send("comm_msg", {"comm_id": "control-1", "data": {"method": "request_states"}})
        assert self.control_answered.wait(timeout), "the kernel did not answer the widget control comm"

    def release_views(self) -> None:
        """Report the views held back so far, and the next ones at once."""
        held, self.held = self.held or [], None
        for update in held:
            self.send("comm_msg", update)

    def on_iopub(self, msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
            self.models[content["comm_id"]] = dict(content["data"].get("state", {}))
        elif kind == "comm_msg" and content["comm_id"] == "control-1":
            self.control = content["data"]
            self.control_answered.set()
        elif kind == "comm_msg" and content["comm_id"] in self.models:
            self.models[content["comm_id"]].update(content["data"].get("state", {}))
        elif kind == "comm_close":
            self.models.pop(content["comm_id"], None)
            if content["comm_id"] == "control-1":
                self.control_answered.set()
        elif kind in ("display_data", "update_display_data"):
            self._display(content)

    def _display(self, content: dict[str, Any]) -> None:
        display_id = content.get("transient", {}).get("display_id")
        if display_id in self.views:
            self._count_views(self.views.pop(display_id), -1)
        view = content["data"].get(WIDGET_VIEW)
        if view is not None:
            if display_id:
                self.views[display_id] = view["model_id"]
            self._count_views(view["model_id"], +1)

    def _count_views(self, model_id: str, step: int) -> None:
        state = self.models.get(model_id)
        if state is None:
            return
        if isinstance(state.get("_view_count"), int):
            state["_view_count"] += step
            update = {"comm_id": model_id, "data": {
                "method": "update", "state": {"_view_count": state["_view_count"]}, "buffer_paths": []}}
            if self.held is not None:
                self.held.append(update)
            else:
                self.send("comm_msg", update)
        for child in state.get("children", []):
            self._count_views(child.removeprefix("IPY_MODEL_"), step)


def texts(messages: list[dict[str, Any]],
          msg_types=("display_data", "update_display_data", "execute_result")) -> list[str]:
    return [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] in msg_types]


def streams(messages: list[dict[str, Any]], name: str | None = None) -> str:
    return "".join(m["content"]["text"] for m in messages
                   if m["msg_type"] == "stream" and name in (None, m["content"]["name"]))


def buttons(messages: list[dict[str, Any]]) -> dict[str, str]:
    """description -> comm id of the ButtonModels the kernel opened."""
    found = {}
    for m in messages:
        if m["msg_type"] == "comm_open":
            state = m["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel":
                found[state["description"]] = m["content"]["comm_id"]
    return found


def widget_displays(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]]


def records(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The confirm records (a confirm display's HTML + text, without a widget view)."""
    return [m["content"]["data"] for m in messages if m["msg_type"] in ("display_data", "update_display_data")
            and "confirm" in m["content"].get("transient", {}).get("display_id", "")
            and WIDGET_VIEW not in m["content"]["data"]]


def outputs(frontend: Frontend, code: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Run ``code``; its IOPub messages, once its reply says ok."""
    reply, messages = frontend.run(code, **kwargs)
    assert reply["status"] == "ok", reply
    return messages


def value_of(frontend: Frontend, expression: str) -> Any:
    """The value of a Python ``expression`` in a python3 kernel (printed as a literal)."""
    messages = outputs(frontend, f"print(repr({expression}))")
    return eval(streams(messages))  # the kernel printed a Python literal
