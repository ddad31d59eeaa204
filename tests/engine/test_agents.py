"""Agent files: front matter, the system prompt, errors with lines, the built-in default."""

from __future__ import annotations

import re

import pytest

from rienda_kernel.engine.home.agents import Agent, list_agents, load_agent
from rienda_kernel.engine.errors import ConfigError
from rienda_kernel.engine.ui import NonInteractiveUI

from ..helpers.homes import write_agent_file


def load_error(home, agent_id, text) -> str:
    path = write_agent_file(home, agent_id, text)
    with pytest.raises(ConfigError) as caught:
        load_agent(home, agent_id)
    message = str(caught.value)
    assert message.startswith(f"{path}:"), message
    return message


VALID = """\
---
description: Reviews diffs
model: scripted/path/to/file.yaml
tools:
  - read
  - shell
hooks: [audit, guard]
---

You review code.

Be brief.

"""


def test_a_valid_agent_with_every_key(tmp_path):
    path = write_agent_file(tmp_path, "reviewer", VALID)
    agent, diagnostics = load_agent(tmp_path, "reviewer")
    assert agent == Agent(
        id="reviewer",
        description="Reviews diffs",
        model="scripted/path/to/file.yaml",
        tools=("read", "shell"),
        hooks=("audit", "guard"),
        system="You review code.\n\nBe brief.",
        path=str(path),
    )
    assert (agent.provider, agent.model_name) == ("scripted", "path/to/file.yaml")
    assert diagnostics == []
    assert agent.to_ctx() == {
        "id": "reviewer",
        "description": "Reviews diffs",
        "model": "scripted/path/to/file.yaml",
        "tools": ["read", "shell"],
        "hooks": ["audit", "guard"],
    }


def test_optional_keys_default_to_empty(tmp_path):
    write_agent_file(tmp_path, "plain", "---\nmodel: openai/gpt-4o\n---\n")
    agent, _ = load_agent(tmp_path, "plain")
    assert (agent.description, agent.tools, agent.hooks, agent.system) == ("", (), (), "")


def test_max_turns_and_provider_options(tmp_path):
    write_agent_file(tmp_path, "bounded", "---\nmodel: a/b\nmax_turns: 7\noptions:\n  max_tokens: 512\n---\n")
    agent, diagnostics = load_agent(tmp_path, "bounded")
    assert (agent.max_turns, dict(agent.options), diagnostics) == (7, {"max_tokens": 512}, [])
    write_agent_file(tmp_path, "plain", "---\nmodel: a/b\n---\n")
    plain, _ = load_agent(tmp_path, "plain")
    assert (plain.max_turns, dict(plain.options)) == (None, {})


def test_only_one_leading_newline_of_the_body_is_removed(tmp_path):
    write_agent_file(tmp_path, "spaced", "---\nmodel: a/b\n---\n\n\n  indented\n")
    agent, _ = load_agent(tmp_path, "spaced")
    assert agent.system == "\n  indented"


def test_windows_line_endings_are_accepted(tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "crlf.md").write_bytes(b"---\r\nmodel: a/b\r\ntools: [read]\r\n---\r\nHello\r\n")
    agent, _ = load_agent(tmp_path, "crlf")
    assert (agent.model, agent.tools, agent.system) == ("a/b", ("read",), "Hello")


@pytest.mark.parametrize(
    "text, line, problem",
    [
        ("model: a/b\n---\nbody\n", 1, "must start with a line '---'"),
        ("---\nmodel: a/b\nbody\n", 1, "never closed by a line '---'"),
        ("---\ndescription: ok\nmodel: [a, b\n---\n", 3, "malformed YAML front matter"),
        ("---\ndescription: ok\n  bad: indent\n---\n", 3, "malformed YAML front matter"),
        ("---\ndescription: typo\nmodle: openai/gpt-4o\n---\n", 3,
         "unknown key 'modle' (did you mean 'model'?); missing required key 'model'"),
        ("---\n- a\n- b\n---\n", 2, "the front matter must be a mapping of keys, got a list"),
        ("---\nmodel: a/b\n\ntools: shell\n---\n", 4, "tools must be a list of names, got a string"),
        ("---\nmodel: a/b\nhooks: {a: 1}\n---\n", 3, "hooks must be a list of names, got a mapping"),
        ("---\nmodel: a/b\ntools:\n  - read\n  - 3\n---\n", 5, "tools must be a list of names, but item 2 is a number"),
        ("---\nmodel: a/b\ntools: [bad name]\n---\n", 3, "tools: 'bad name' is not a valid name"),
        ("---\nmodel: a/b\ndescription: [x]\n---\n", 3, "description must be a string, got a list"),
        ("---\nmodel: gpt-4o\n---\n", 2, "model must be provider/model, e.g. openai/gpt-4o, got 'gpt-4o'"),
        ("---\nmodel: openai/\n---\n", 2, "model must be provider/model"),
        ("---\nmodel: /gpt-4o\n---\n", 2, "model must be provider/model"),
        ("---\nmodel: 4\n---\n", 2, "model must be provider/model, e.g. openai/gpt-4o, got a number"),
        ("---\nmodel: a/b\ntools:\n  - read\n  - shell\n  - read\n---\n", 6,
         "tools lists 'read' twice (first at line 4)"),
        ("---\nmodel: a/b\nhooks: [audit, audit]\n---\n", 3, "hooks lists 'audit' twice"),
        ("---\nmodel: a/b\ntools: [read]\ntools: [shell]\n---\n", 4, "key 'tools' appears twice (first at line 3)"),
        ("---\nmodel: a/b\nmax_turns: 0\n---\n", 3,
         "max_turns must be a positive whole number of model turns, got the number 0"),
        ("---\nmodel: a/b\nmax_turns: '5'\n---\n", 3,
         "max_turns must be a positive whole number of model turns, got the string '5'"),  # as config.yaml says it
        ("---\nmodel: a/b\nmax_turns: true\n---\n", 3, "max_turns must be a positive whole number"),
        ("---\nmodel: a/b\noptions: [max_tokens]\n---\n", 3, "options must be a mapping of provider options"),
    ],
)
def test_each_error_names_the_file_line_and_problem(tmp_path, text, line, problem):
    message = load_error(tmp_path, "broken", text)
    path = tmp_path / "agents" / "broken.md"
    assert message.startswith(f"{path}:{line}: "), message
    assert problem in message


def test_an_unknown_key_is_a_diagnostic_with_a_suggestion(tmp_path):
    path = write_agent_file(tmp_path, "typo", "---\nmodel: a/b\ntool: [read]\ncolour: red\n---\n")
    agent, diagnostics = load_agent(tmp_path, "typo")
    assert agent.tools == ()
    assert [(d.source, d.message, d.path, d.line) for d in diagnostics] == [
        ("extensions:agent", f"{path}:3: unknown key 'tool' (did you mean 'tools'?); ignored", str(path), 3),
        ("extensions:agent", f"{path}:4: unknown key 'colour'; ignored", str(path), 4),
    ]


def test_the_default_agent_is_built_in(tmp_path):
    agent, diagnostics = load_agent(tmp_path, "default")
    assert diagnostics == []
    assert agent.id == "default" and agent.path is None
    assert agent.description == "Rienda's default agent: the built-in tools and no hooks."
    assert (agent.model, agent.model_label) == ("", "chosen when it runs")  # the provider choice picks it at run time
    configured, _ = load_agent(tmp_path, "default", default_model="ollama/qwen3")
    assert (configured.model, configured.model_label) == ("ollama/qwen3", "ollama/qwen3")
    assert agent.tools == ("shell", "http", "read", "write") and agent.hooks == ()  # not agent
    assert agent.system.strip()
    assert load_agent(tmp_path, "default", default_model="openai/gpt-4o")[0].model == "openai/gpt-4o"


def test_a_default_file_overrides_the_built_in(tmp_path):
    path = write_agent_file(tmp_path, "default", "---\nmodel: openai/gpt-4o\ntools: [read]\n---\nMine.\n")
    agent, _ = load_agent(tmp_path, "default", default_model="other/model")
    assert (agent.model, agent.tools, agent.system, agent.path) == ("openai/gpt-4o", ("read",), "Mine.", str(path))


def test_a_missing_agent_lists_the_available_ones(tmp_path):
    write_agent_file(tmp_path, "coder", "---\nmodel: a/b\n---\n")
    write_agent_file(tmp_path, "reviewer", "---\nmodel: a/b\n---\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(tmp_path, "coderr")
    message = str(caught.value)
    assert str(tmp_path / "agents" / "coderr.md") in message
    assert "did you mean 'coder'?" in message
    assert "available: coder, default, reviewer" in message


def test_an_agent_id_cannot_leave_the_directory(tmp_path):
    with pytest.raises(ConfigError, match=re.escape("'../x' is not a valid agent id")):
        load_agent(tmp_path, "../x")


def test_list_agents_sorts_includes_the_default_and_skips_broken_files(tmp_path):
    write_agent_file(tmp_path, "zeta", "---\nmodel: a/b\nmodle: x\n---\n")
    write_agent_file(tmp_path, "alpha", "---\nmodel: a/b\n---\n")
    broken = write_agent_file(tmp_path, "broken", "---\nmodel: a/b\ntools: shell\n---\n")
    write_agent_file(tmp_path, "bad name", "---\nmodel: a/b\n---\n")
    agents, diagnostics = list_agents(tmp_path, default_model="openai/gpt-4o")
    assert [agent.id for agent in agents] == ["alpha", "default", "zeta"]
    assert agents[1].model == "openai/gpt-4o"
    by_path = {d.path: d for d in diagnostics}
    assert len(diagnostics) == 3
    assert by_path[str(broken)].message == f"{broken}:3: tools must be a list of names, got a string"
    assert by_path[str(broken)].line == 3
    assert "is not a valid agent id" in by_path[str(tmp_path / "agents" / "bad name.md")].message
    assert "unknown key 'modle'" in by_path[str(tmp_path / "agents" / "zeta.md")].message


def test_list_agents_without_a_folder_is_the_default_alone(tmp_path):
    agents, diagnostics = list_agents(tmp_path)
    assert [agent.id for agent in agents] == ["default"] and diagnostics == []


def test_a_broken_default_file_still_overrides_the_built_in(tmp_path):
    write_agent_file(tmp_path, "default", "---\ndescription: oops\nmodle: a/b\n---\n")
    agents, diagnostics = list_agents(tmp_path)
    assert agents == []
    assert "missing required key 'model'" in diagnostics[0].message


def test_a_file_without_a_model_is_an_agent_a_run_refuses_in_one_line(tmp_path):
    """A gate's policy never calls a model: its file needs no model (rienda gate, rienda hook
    and replay use it); a run, which would call one, says what is missing."""
    from rienda_kernel.engine import Rienda

    write_agent_file(tmp_path, "policy", "---\ndescription: the team's policy\n---\n")
    agents, diagnostics = list_agents(tmp_path)
    policy = next(agent for agent in agents if agent.id == "policy")
    assert (policy.model, policy.model_label, diagnostics) == ("", "none (rienda gate only)", [])
    result = Rienda(home=tmp_path, workdir=tmp_path).conversation("policy").run("hi", NonInteractiveUI())
    assert result.reason == "error" and result.error == (
        f"agent policy names no model ({tmp_path / 'agents' / 'policy.md'} has no model: line): add model: "
        "provider/model to run it, or give --model")


def test_a_missing_agents_available_list_leaves_out_those_that_fail_to_load_and_says_they_did(tmp_path):
    write_agent_file(tmp_path, "coder", "---\nmodel: a/b\n---\n")
    write_agent_file(tmp_path, "broken", "no front matter\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(tmp_path, "brokn")
    message = str(caught.value)
    assert "did you mean 'broken'?" in message
    assert message.endswith("(did you mean 'broken'? available: coder, default; failed to load: broken "
                            "(the agents listing says why))")


def test_a_model_with_no_provider_in_an_agent_file_names_the_file_and_line(rig):
    """A typo in an agent file's ``model:`` fails the run before it starts, and the line
    names the file and the ``model:`` line, with the closest provider (issue 40)."""
    from rienda_kernel.engine import NonInteractiveUI
    from rienda_kernel.engine.runtime.rienda import Rienda

    path = rig.home / "agents" / "typo.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\ndescription: Typo.\nmodel: opneai/gpt-4o\n---\nHelp.\n")
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("typo").run(
        "hi", NonInteractiveUI())
    assert result.reason == "error"
    assert result.error.startswith(f"{path}:3: model 'opneai/gpt-4o': no provider named 'opneai' (did you mean "
                                   "'openai'? "), result.error
    assert not (rig.home / "sessions").exists()  # refused before anything was saved
