"""A real kernel started through jupyter_client, and a client that acts as a front end
(JupyterLab, nbclient or jupyter console, as a test needs)."""

from __future__ import annotations

import os
import queue
import textwrap
import time
from pathlib import Path
from typing import Any

import yaml
from jupyter_client.manager import KernelManager


class Frontend:
    """A started kernel and a blocking client, with helpers to act like JupyterLab."""

    def __init__(self, home: Path, workdir: Path, env: dict[str, str], kernel_name: str = "rienda"):
        self.home, self.workdir = home, workdir
        self.km = KernelManager(kernel_name=kernel_name)
        self.km.start_kernel(cwd=str(workdir), env={**os.environ, "RIENDA_HOME": str(home), **env})
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.others: list[dict[str, Any]] = []  # IOPub messages of other parents (e.g. widget updates of a click)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def announce_widgets(self) -> None:
        """What JupyterLab's widget manager does on connecting: open jupyter.widget.control."""
        msg = self.kc.session.msg("comm_open", {"comm_id": "control-1", "target_name": "jupyter.widget.control",
                                                "data": {}}, metadata={"version": "1.0.0"})
        self.kc.shell_channel.send(msg)
        time.sleep(0.3)
        self.drain()

    def drain(self) -> list[dict[str, Any]]:
        messages = []
        while True:
            try:
                messages.append(self.kc.get_iopub_msg(timeout=0.2))
            except queue.Empty:
                return messages

    def submit(self, code: str, allow_stdin: bool = False) -> str:
        return self.kc.execute(code, allow_stdin=allow_stdin)

    def collect(self, msg_id: str, timeout: float = 60, until=None) -> list[dict[str, Any]]:
        """IOPub messages of ``msg_id`` until the kernel is idle (or ``until(msg)`` is true)."""
        deadline = time.monotonic() + timeout
        messages = []
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.5)
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

    def click(self, comm_id: str) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id,
                                               "data": {"method": "custom", "content": {"event": "click"}}})
        self.kc.shell_channel.send(msg)


def texts(messages: list[dict[str, Any]], msg_types=("display_data", "update_display_data")) -> list[str]:
    return [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] in msg_types]


def streams(messages: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def buttons(messages: list[dict[str, Any]]) -> dict[str, str]:
    """description -> comm id of the ButtonModels the kernel opened."""
    found = {}
    for m in messages:
        if m["msg_type"] == "comm_open":
            state = m["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel":
                found[state["description"]] = m["content"]["comm_id"]
    return found


def write_extension(home: Path, kind: str, name: str, source: str) -> None:
    path = home / kind / name / "index.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))


def write_agent(home: Path, name: str, tools=(), hooks=(), model="scripted/script.yaml") -> None:
    (home / "agents" / f"{name}.md").write_text(
        f"---\ndescription: test\nmodel: {model}\ntools: {list(tools)}\nhooks: {list(hooks)}\n---\nBe brief.\n")


def write_script(work: Path, responses: list) -> None:
    (work / "script.yaml").write_text(yaml.safe_dump(responses, sort_keys=False))


# Tools both the kernel and the magics tests use.
PUBLISH = """
module.exports = {
  description: "Publishes.",
  parameters: { type: "object", properties: {} },
  execute: function (ctx) {
    ctx.log("about to ask");
    return ctx.confirm({ title: "Publish", body: "Push the current branch?" }) ? "pushed" : { text: "cancelled", isError: true };
  },
};
"""

SLOW = """
module.exports = {
  description: "Waits for a release file.",
  parameters: { type: "object", properties: {} },
  execute: function (ctx) {
    ctx.log("waiting for release");
    const r = ctx.system.exec("echo exec-started; while [ ! -e release ]; do sleep 0.02; done; echo exec-done");
    return r.stdout.trim();
  },
};
"""
