"""The ``ctx.notify`` notices a run printed are kept in its session, and ``rienda show`` (and
``/show`` in ``rienda chat``) shows each where it happened, as the run printed it."""

from __future__ import annotations

import pytest

from ..helpers.cli import rienda
from ..helpers.homes import call_script, only_session_lines, scripted_home, write_agent, write_extension, write_script

NOTICES = {
    "gate": "module.exports = { beforeToolExecute(ctx, c) { ctx.notify({ title: 'gate', body: 'calling ' + c.name }); },"
            " afterRun(ctx, e) { ctx.notify({ title: 'audit', body: 'run finished: ' + e.reason }); } };",
}
TELLER = ('module.exports = { description: "t", parameters: { type: "object" }, execute(ctx) {'
          ' ctx.notify({ title: "teller", body: "in the tool" }); return "told"; } };')
PRINTED = ["[hook:gate.beforeToolExecute] notice: gate: calling teller",
           "[tool:teller] notice: teller: in the tool",
           "[hook:gate.afterRun] notice: audit: run finished: end_turn"]


@pytest.fixture
def notifying(tmp_path):
    home, work = scripted_home(tmp_path)
    write_extension(home, "hooks", "gate", NOTICES["gate"])
    write_extension(home, "tools", "teller", TELLER)
    write_agent(home, "teller", ["teller"], ["gate"])
    write_script(work, call_script("teller"))
    return home, work


def test_show_has_each_notice_the_run_printed_where_it_happened(notifying):
    home, work = notifying
    run = rienda(home, work, "run", "--agent", "teller", "go")
    assert run.returncode == 0, run.stderr
    assert [line for line in run.stderr.splitlines() if " notice: " in line] == PRINTED
    records = only_session_lines(home)
    assert [(r["source"], r["title"], r["body"], r["depth"]) for r in records if r["type"] == "notify"] == [
        ("hook:gate.beforeToolExecute", "gate", "calling teller", 0), ("tool:teller", "teller", "in the tool", 0),
        ("hook:gate.afterRun", "audit", "run finished: end_turn", 0)]
    shown = rienda(home, work, "show", "last").stdout.splitlines()
    assert [line for line in shown if " notice: " in line] == [f"    {line}" for line in PRINTED]
    call, result = shown.index("  → teller [call_1_1] {}"), shown.index("  ← teller [call_1_1]: told")
    assert call < shown.index(f"    {PRINTED[0]}") < shown.index(f"    {PRINTED[1]}") < result
    assert shown.index("assistant: Finished.") < shown.index(f"    {PRINTED[2]}") < shown.index("-- run ended: end_turn")


def test_slash_show_in_chat_has_them_too(notifying):
    home, work = notifying
    done = rienda(home, work, "chat", "--agent", "teller", input="go\n/show\n/exit\n")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if " notice: " in line] == [f"    {line}" for line in PRINTED]
