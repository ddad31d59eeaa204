"""``rienda sessions``, ``agents``, ``tools`` and ``hooks`` print the tables ``/sessions``,
``/agents``, ``/tools`` and ``/hooks`` print in ``rienda chat`` (one table code), and
``--json`` one object a line for programs. Real processes, sessions real runs saved
(a lead and its sub-agent's) (issue 40)."""

from __future__ import annotations

import json

import pytest

from ..helpers.cli import rienda, table_rows
from ..helpers.homes import write_extension
from ..helpers.trees import delegate, write_agent, write_script


@pytest.fixture
def saved(tmp_path):
    """(home, work): a lead's session and its helper's, and a hook."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    write_agent(home, "lead", tools=("agent",))
    write_agent(home, "helper")
    write_script(work, "lead", [delegate("helper", "count"), {"text": "helper said 3"}])
    write_script(work, "helper", [{"text": "3"}])
    write_extension(home, "hooks", "audit", "module.exports = { afterRun(ctx, e) {} };")
    assert rienda(home, work, "run", "--agent", "lead", "go").returncode == 0
    return home, work


def chat_table(home, work, command: str) -> list[str]:
    """The table lines of ``/COMMAND`` in ``rienda chat`` on a pipe (its heading left out)."""
    done = rienda(home, work, "chat", input=f"/{command}\n")
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n\n")[1].splitlines()


def test_rienda_sessions_is_the_table_slash_sessions_shows(saved):
    home, work = saved
    listed = rienda(home, work, "sessions")
    assert listed.returncode == 0 and listed.stderr == ""
    shown = chat_table(home, work, "sessions")
    assert [line[2:] for line in shown] == listed.stdout.splitlines()  # chat's first column marks the current one
    lead, helper = table_rows(listed.stdout)
    assert (lead["agent"], lead["messages"], lead["title"], lead["sub-agent of"]) == ("lead", "4", "go", "")
    assert (helper["agent"], helper["sub-agent of"]) == ("helper", lead["id"])


def test_sessions_json_is_one_object_a_session(saved):
    home, work = saved
    done = rienda(home, work, "sessions", "--json")
    assert done.returncode == 0 and done.stderr == ""
    lead, helper = map(json.loads, done.stdout.splitlines())
    assert set(lead) == {"id", "agent", "model", "created", "messages", "title", "parent_session_id",
                         "gate"}
    assert (lead["agent"], lead["messages"], lead["title"], lead["parent_session_id"]) == ("lead", 4, "go", None)
    assert (helper["agent"], helper["parent_session_id"]) == ("helper", lead["id"])
    newest = rienda(home, work, "sessions", "-n", "1", "--json", "--agent", "lead")
    assert [json.loads(line)["id"] for line in newest.stdout.splitlines()] == [lead["id"]]


@pytest.mark.parametrize("listing, key", [("agents", "id"), ("tools", "name"), ("hooks", "name")])
def test_agents_tools_and_hooks_are_the_tables_of_chat_and_json_for_programs(saved, listing, key):
    home, work = saved
    listed = rienda(home, work, listing)
    assert listed.returncode == 0, listed.stderr
    rows = table_rows(listed.stdout)
    shown = table_rows("\n".join(line[3:] if listing == "agents" else line  # chat's "*" marks the current agent
                                 for line in chat_table(home, work, listing)))
    assert list(rows[0]) == list(shown[0])  # the same columns, in the same order
    assert [row[key] for row in rows] == [row[key] for row in shown]
    as_json = [json.loads(line) for line in rienda(home, work, listing, "--json").stdout.splitlines()]
    assert [item[key] for item in as_json] == [row[key] for row in rows]
    if listing == "hooks":
        assert as_json == [{"name": "audit", "points": ["afterRun"], "path": str(home / "hooks" / "audit" / "index.js")}]
