"""MCP servers' lives, against real processes: started once per Rienda when first needed,
stopped by ``Rienda.close()``; failures to start, a crash mid-call, an interrupt (with the
protocol's cancellation), progress and logs while a call runs; streamable HTTP; secrets."""

from __future__ import annotations

import sys
import textwrap
import threading

import pytest

from rienda_kernel.engine import CancelToken, Log, NonInteractiveUI, ToolResultReady

from ...helpers.mcp_servers import (gone, http_lab, lab_server, pids, quitter_server, time_server, traces,
                                    wait_until)
from ...helpers.processes import alive
from .mcp_setup import Home, results


@pytest.fixture
def lab(tmp_path, sandbox):
    setup = Home(tmp_path, {"lab": lab_server(tmp_path / "lab")}, sandbox)
    yield setup
    setup.rienda.close()


def test_a_server_starts_when_its_tools_are_first_needed_once_per_rienda_and_stops_at_close(lab):
    lab.rienda.catalog()
    lab.rienda.catalog(tools=["shell"])
    lab.run(["shell"], [])
    assert pids(lab.lab) == []  # nothing asked for its tools yet
    first, _ = lab.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 1})])
    second, _ = lab.run(["mcp__lab"], [("mcp__lab__double", {"n": 2})])
    assert results(first) + results(second) == [("2", False), ("4", False)]
    [pid] = pids(lab.lab)
    assert alive(pid)
    lab.rienda.close()
    assert gone(pid), "the server outlived Rienda.close()"


def test_a_server_whose_settings_changed_is_restarted_and_a_removed_one_stopped(lab):
    lab.rienda.catalog(tools=["mcp__lab__double"])
    [first] = pids(lab.lab)
    lab.configure({"lab": lab_server(lab.lab, MODE="changed")})
    assert "mcp__lab__double" in lab.rienda.catalog(tools=["mcp__lab__double"]).tools
    old, new = pids(lab.lab)
    assert gone(old) and alive(new)
    lab.configure({"time": time_server()})
    lab.rienda.catalog(tools=[])
    assert gone(new)


def test_servers_that_cannot_start_are_diagnostics_naming_them_and_the_other_tools_work(tmp_path, sandbox):
    pid_file = tmp_path / "mute.pid"
    mute = {"command": sys.executable, "start_timeout": 1,
            "args": ["-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"]}
    setup = Home(tmp_path, {"missing": {"command": "/nonexistent/mcp-server"},
                            "quitter": quitter_server("Traceback...\nquitter: no API token given\n"),
                            "mute": mute, "time": time_server()}, sandbox)
    try:
        catalog = setup.rienda.catalog(mcp_servers=True)
        said = {d.source: d.message for d in catalog.diagnostics}
        assert said["mcp:missing"] == ("MCP server 'missing' (/nonexistent/mcp-server): command not found: "
                                       "/nonexistent/mcp-server")
        assert said["mcp:quitter"].startswith("MCP server 'quitter' (")
        assert said["mcp:quitter"].endswith("it exited before answering initialize; its stderr ended: Traceback... | "
                                            "quitter: no API token given")
        assert said["mcp:mute"].endswith("no answer to initialize within 1 s")
        assert gone(int(pid_file.read_text())), "the server that never answered was left running"
        assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(catalog.tools)
        result, _ = setup.run(["mcp__quitter"], [])
        assert result.reason == "error" and result.error.endswith(
            "declares tool 'mcp__quitter', which does not exist (" + said["mcp:quitter"] + ")")
    finally:
        setup.rienda.close()


def test_a_server_that_dies_mid_call_is_that_calls_error_and_the_next_call_starts_it_again(lab):
    result, _ = lab.run(["mcp__lab"], [("mcp__lab__crash", {}), ("mcp__lab__double", {"n": 21})])
    assert result.reason == "end_turn"
    (crashed, crashed_error), restarted = results(result)
    assert crashed_error and crashed.startswith("mcp__lab__crash failed: MCP server 'lab' (")
    assert crashed.endswith("closed the connection during the call; its stderr ended: lab: crashing on purpose "
                            "(the next call starts it again)")
    assert restarted == ("42", False)
    first, second = pids(lab.lab)
    assert gone(first) and alive(second)


class StopOnLog(NonInteractiveUI):
    """Cancels the run when a log line with ``text`` arrives: only a line delivered while
    the call runs can stop it (a line held back until the result would come too late)."""

    def __init__(self, text: str, cancel: CancelToken) -> None:
        super().__init__(sink=lambda event: cancel.cancel() if isinstance(event, Log) and event.text == text else None)


def test_progress_and_logs_arrive_while_the_call_runs_and_an_interrupt_ends_it_with_the_cancellation_sent(lab):
    cancel = CancelToken()
    ui = StopOnLog("step 3 (3/3)", cancel)
    result, _ = lab.run(["mcp__lab__slow"], [("mcp__lab__slow", {"seconds": 60})], ui=ui, cancel=cancel)
    assert result.reason == "interrupted"
    assert [(e.source, e.text) for e in ui.events if isinstance(e, Log)] == [
        ("tool:mcp__lab__slow", "warming up"), ("tool:mcp__lab__slow", "step 1 (1/3)"),
        ("tool:mcp__lab__slow", "step 2 (2/3)"), ("tool:mcp__lab__slow", "step 3 (3/3)")]
    assert results(result) == [("interrupted before the tool finished", True)]
    wait_until(lambda: traces(lab.lab, "cancelled"), "the server hearing notifications/cancelled")
    after, _ = lab.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 4})])  # the same server goes on
    assert results(after) == [("8", False)] and len(pids(lab.lab)) == 1


def test_closing_while_a_server_is_busy_in_a_call_it_ignores_the_cancellation_of_ends_its_process(lab):
    cancel = CancelToken()

    def interrupt_once_it_runs() -> None:
        wait_until(lambda: traces(lab.lab, "started"), "the stubborn tool running")
        cancel.cancel()

    watcher = threading.Thread(target=interrupt_once_it_runs, daemon=True)
    watcher.start()
    result, _ = lab.run(["mcp__lab__stubborn"], [("mcp__lab__stubborn", {"seconds": 120})], cancel=cancel)
    watcher.join(30)
    assert result.reason == "interrupted"
    [pid] = pids(lab.lab)
    lab.rienda.close()  # the server still sleeps in its tool: it is terminated, not waited for
    assert gone(pid)


def test_a_streamable_http_server_with_headers_that_stay_secret(tmp_path, sandbox):
    token = "http-secret-token-12345"
    with http_lab(tmp_path / "lab") as url:
        setup = Home(tmp_path, {"docs": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}, sandbox)
        try:
            assert "mcp__docs__slow" in setup.rienda.catalog(mcp_servers=True).tools
            result, ui = setup.run(["mcp__docs"], [("mcp__docs__double", {"n": 21}), ("mcp__docs__authorization", {})])
            assert results(result) == [("42", False), (f"Bearer {token}", False)]  # the server got it...
            shown = [e.text for e in ui.events if isinstance(e, ToolResultReady)]
            assert shown == ["42", "[redacted]"]  # ...and no output shows it
            assert token not in setup.session_text(result) and token not in repr(ui.events)
        finally:
            setup.rienda.close()


SHOW_CONFIG = textwrap.dedent("""
    module.exports = {
      afterToolExecute: function (ctx, call, result) { ctx.log(JSON.stringify(ctx.config)); ctx.log(result.text); },
    };
""")


def test_a_stdio_servers_env_is_secret_in_every_output_and_rienda_s_own_secrets_stay_home(tmp_path, sandbox,
                                                                                          monkeypatch):
    monkeypatch.setenv("RIENDA_TEST_API_KEY", "sk-provider-key-that-is-ours")
    token = "env-secret-value-45678"
    setup = Home(tmp_path, {"lab": lab_server(tmp_path / "lab", SERVICE_TOKEN=token)}, sandbox)
    try:
        hook = setup.hook("show-config", SHOW_CONFIG)
        calls = [("mcp__lab__environment", {"name": "SERVICE_TOKEN"}),
                 ("mcp__lab__environment", {"name": "RIENDA_TEST_API_KEY"})]
        result, ui = setup.run(["mcp__lab"], calls, hooks=[hook])
        assert results(result) == [(token, False), ("(unset)", False)]  # the server has its env, not ours
        assert [e.text for e in ui.events if isinstance(e, ToolResultReady)] == ["[redacted]", "(unset)"]
        logs = [e.text for e in ui.events if isinstance(e, Log)]
        assert '"SERVICE_TOKEN":"[redacted]"' in logs[0] and logs[1] == "[redacted]"
        assert token not in setup.session_text(result) and token not in repr(ui.events)
    finally:
        setup.rienda.close()


class ThreadsSeen(dict):
    """A dict that records the name of the thread of every read and write."""

    threads: set[str]


def _recorded(method: str):
    def wrapper(self, *args, **kwargs):
        self.threads.add(threading.current_thread().name)
        return getattr(dict, method)(self, *args, **kwargs)
    return wrapper


for _method in ("__getitem__", "__setitem__", "__delitem__", "__contains__", "__iter__", "__len__", "get", "pop",
                "setdefault", "items", "keys", "values", "clear", "update", "copy"):
    setattr(ThreadsSeen, _method, _recorded(_method))


def test_only_the_loop_thread_touches_the_servers_connections(lab):
    """Starting, calling, restarting (its settings changed) and closing a server: the
    connections are read and written on the "rienda-mcp" thread alone, never on the run's."""
    lab.rienda.catalog()  # makes the Rienda's McpServers; no server runs yet
    connections = ThreadsSeen()
    connections.threads = set()
    lab.rienda._mcp._connections = connections  # noqa: SLF001 - the state under test
    first, _ = lab.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 1})])
    lab.configure({"lab": lab_server(lab.lab, MODE="changed")})
    second, _ = lab.run(["mcp__lab"], [("mcp__lab__double", {"n": 2})])
    old, new = pids(lab.lab)
    lab.rienda.close()
    assert results(first) + results(second) == [("2", False), ("4", False)]
    assert gone(old) and gone(new)
    assert connections.threads == {"rienda-mcp"}
