"""How the notebook tools enter the engine: a front end's own built-ins on one ``Rienda``,
where their code runs and how a stopped run stops it, the error where they do not exist,
and replay re-running them in a fresh namespace. (Through real kernels: tests/jupyter/magics and
tests/jupyter/kernel.)"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time

import pytest
import yaml

from rienda_kernel.engine import BUILTIN_TOOLS, CancelToken, NonInteractiveUI
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine.builtins.code_runner import MainThreadRunner, in_thread
from rienda_kernel.engine.builtins.notebook import PythonNamespace, notebook_tools
from rienda_kernel.engine.testing.replay import replay_session, session_script
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.homes import session_lines, write_agent, write_script


class Host:
    def __init__(self, cancel=None):
        self.cancel = cancel or CancelToken()


def run_python(namespace, code, cancel=None):
    return notebook_tools(namespace)["python"].run(Host(cancel), {"code": code})


def agent_with_script(rig, name, tools, script, hooks=()):
    """Agent ``name`` on the scripted model reading ``<name>.yaml``, which holds ``script``."""
    write_agent(rig.home, name, tools, hooks, model=f"scripted/{name}.yaml", description=None, body="Explore.")
    write_script(rig.workdir, script, f"{name}.yaml")


# -- where the code runs, and stopping it ------------------------------------------------------


def test_code_on_a_thread_of_its_own_is_interrupted_when_the_run_stops():
    namespace = PythonNamespace(run=in_thread)
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    with pytest.raises(Interrupted, match="stopped"):
        run_python(namespace, "spins = 0\nwhile True:\n    spins += 1", cancel)
    spins = namespace.values["spins"]
    assert spins > 0
    time.sleep(0.1)  # a loop still running would keep counting
    assert namespace.values["spins"] == spins


def test_code_on_a_thread_of_its_own_returns_its_result_and_keeps_its_variables():
    namespace = PythonNamespace(run=in_thread)
    assert run_python(namespace, "import threading\nwhere = threading.current_thread().name\nwhere") == ("'rienda-python'", False)
    assert namespace.values["where"] == "rienda-python"


class MainThread:
    """Stands for a notebook's main thread: runs the jobs it is handed, in order."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.escaped: list[BaseException] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while (job := self.jobs.get()) is not None:
            try:
                job()
            except BaseException as exc:  # noqa: BLE001 - what the runner lets through
                self.escaped.append(exc)

    def stop(self):
        self.jobs.put(None)
        self.thread.join(5)


def test_the_main_thread_runner_runs_the_code_where_the_namespace_lives():
    main = MainThread()
    try:
        namespace = PythonNamespace(run=MainThreadRunner(main.jobs.put))
        run_python(namespace, "import threading\nident = threading.get_ident()")
        assert namespace.values["ident"] == main.thread.ident
    finally:
        main.stop()


def test_a_keyboard_interrupt_in_the_code_stops_the_tool_and_goes_no_further():
    main = MainThread()
    try:
        namespace = PythonNamespace(run=MainThreadRunner(main.jobs.put))
        with pytest.raises(Interrupted, match="stopped"):
            run_python(namespace, "raise KeyboardInterrupt")
        assert run_python(namespace, "'still here'") == ("'still here'", False)
    finally:
        main.stop()
    assert main.escaped == []


def test_code_whose_run_was_stopped_before_it_started_never_runs():
    held: list = []
    namespace = PythonNamespace(run=MainThreadRunner(held.append))  # the main thread is busy
    cancel = CancelToken()
    threading.Timer(0.05, cancel.cancel).start()
    with pytest.raises(Interrupted):
        run_python(namespace, "ran = True", cancel)
    [job] = held
    job()  # the main thread gets to it at last
    assert "ran" not in namespace.values


def test_the_runner_says_when_the_users_code_is_running():
    runner = MainThreadRunner(lambda job: job())
    namespace = PythonNamespace(run=runner)
    namespace.values["runner"] = runner
    assert run_python(namespace, "runner.busy") == ("True", False)
    assert runner.busy is False


# -- a front end's own built-ins -------------------------------------------------------------------


def test_extra_tools_belong_to_one_rienda_and_never_to_the_shared_builtins(rig):
    with_tools = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox,
                        extra_tools=notebook_tools(PythonNamespace()))
    without = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    assert {"python", "variables"} <= set(with_tools.catalog().tools)
    assert not {"python", "variables"} & set(without.catalog().tools)
    assert "python" not in BUILTIN_TOOLS


def test_a_users_tool_of_the_same_name_shadows_a_notebook_tool(rig):
    rig.write_tool("python", """module.exports = { description: "Mine.", parameters: { type: "object" },
      execute: () => "mine" };""")
    catalog = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox,
                     extra_tools=notebook_tools(PythonNamespace())).catalog()
    assert catalog.tools["python"].description == "Mine." and "python" in catalog.shadowed


def test_a_run_calls_python_through_the_hooks_and_the_ledger_records_the_rewrite(rig):
    rig.write_hook("sober", """module.exports = { beforeToolExecute(ctx, call) {
      if (call.name !== "python") return;
      if (/open\\(/.test(call.arguments.code)) return { allow: false, reason: "no files from the agent" };
      return { arguments: { code: call.arguments.code.replace("42", "41") } }; } };""")
    agent_with_script(rig, "explorer", ["python"], [
        {"text": "", "tool_calls": [{"name": "python", "arguments": {"code": "answer = 42\nanswer + 1"}},
                                    {"name": "python", "arguments": {"code": "open('x.txt', 'w')"}}]},
        {"text": "Done."},
    ], hooks=["sober"])
    namespace = PythonNamespace()
    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox, extra_tools=notebook_tools(namespace))
    result = rienda.conversation("explorer").run("go", NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    assert namespace.values["answer"] == 41
    assert not (rig.workdir / "x.txt").exists()
    lines = session_lines(rig.home, result.session_id)
    tool_texts = [line["text"] for line in lines if line.get("role") == "tool"]
    assert tool_texts[0] == "42" and "no files from the agent" in tool_texts[1]
    effects = [(d["call_id"], d["effect"]) for d in lines if d["type"] == "hook_decision"]
    assert effects == [("call_1_1", "rewrote"), ("call_1_2", "refused")]


def test_an_agent_that_declares_python_where_it_does_not_exist_is_told_where_it_does(rig):
    agent_with_script(rig, "explorer", ["python"], [{"text": "never"}])
    env = {**os.environ, "RIENDA_HOME": str(rig.home)}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "explorer", "go"],
                          cwd=rig.workdir, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "declares tool 'python', which does not exist here: it is a notebook tool" in done.stderr
    assert "%rienda magics" in done.stderr and "Rienda Jupyter kernel" in done.stderr
    assert not list(rig.home.glob("sessions/*.jsonl"))


# -- replay -----------------------------------------------------------------------------------------


def test_replay_reuses_recorded_python_results_or_runs_the_code_again_in_a_fresh_namespace(rig):
    agent_with_script(rig, "explorer", ["python"], [
        {"text": "", "tool_calls": [{"name": "python", "arguments": {"code": "rows = [1, 2, 3]\nsum(rows)"}}]},
        {"text": "", "tool_calls": [{"name": "python", "arguments": {"code": "len(rows) + len(notebook_only)"}}]},
        {"text": "Six."},
    ])
    notebook = PythonNamespace({"notebook_only": "abc"})
    recorder = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox, extra_tools=notebook_tools(notebook))
    result = recorder.conversation("explorer").run("go", NonInteractiveUI())
    assert result.reason == "end_turn", result.error

    plain = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)  # as `rienda replay` is
    reused = replay_session(plain, result.session_id, hooks=[])
    assert [call.now_result.text for call in reused.calls] == ["6", "6"]

    del notebook.values["rows"]
    again = replay_session(plain, result.session_id, hooks=[], run_tools=True)
    first, second = again.calls
    assert first.now_result.text == "6"
    # `rows` from the first call is there for the second, in a namespace of the replay's own:
    assert second.now_result.is_error and "NameError: name 'notebook_only' is not defined" in second.now_result.text
    assert "rows" not in notebook.values


def test_what_python_returns_is_capped_like_any_tool_result(rig):
    agent_with_script(rig, "explorer", ["python"], [
        {"text": "", "tool_calls": [{"name": "python", "arguments": {"code": "'x' * 1_000_000"}}]},
        {"text": "Long."},
    ])
    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox,
                    extra_tools=notebook_tools(PythonNamespace()))
    result = rienda.conversation("explorer").run("go", NonInteractiveUI())
    [(_, answer)] = result.tool_calls
    assert len(answer.text.encode()) <= 256 * 1024 and answer.text.endswith("[rienda: output cut at 256 KiB]")


def test_after_tool_execute_redacts_what_python_returns_and_the_session_becomes_a_script(rig):
    rig.write_hook("no-salaries", """module.exports = { afterToolExecute(ctx, call, result) {
      if (call.name === "python") return { text: result.text.replace(/\\d{5,}/g, "[salary]") }; } };""")
    agent_with_script(rig, "explorer", ["python"], [
        {"text": "", "tool_calls": [{"name": "python", "arguments": {"code": "print('Ada earns', 123456)"}}]},
        {"text": "Ada earns a salary."},
    ], hooks=["no-salaries"])
    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox,
                    extra_tools=notebook_tools(PythonNamespace()))
    result = rienda.conversation("explorer").run("go", NonInteractiveUI())
    [(_, answer)] = result.tool_calls
    assert answer.text == "Ada earns [salary]"
    lines = session_lines(rig.home, result.session_id)
    assert [line["text"] for line in lines if line.get("role") == "tool"] == ["Ada earns [salary]"]  # as saved
    script = yaml.safe_load(session_script(rienda, result.session_id))
    assert script[0]["tool_calls"][0]["name"] == "python"
    assert script[0]["tool_calls"][0]["arguments"] == {"code": "print('Ada earns', 123456)"}
