"""docs/contract.md and the tests agree: every behaviour id has a test named for it.

Also the behaviours no other file names: the same ``ctx`` for tools and hooks in one run
(T11), agent files (A01), and the session saved as it happens with ``afterModelResponse``
before the save (A02).
"""

from __future__ import annotations

import json
import re

import yaml

from rienda_kernel.engine import Log, NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda
from tests.helpers import paths

ROOT = paths.REPO
_CONTRACT_ID = re.compile(r"^- \*\*([TAH]\d{2})\*\*", re.M)
_TEST_IDS = re.compile(r"def (test_(?:[TAH]\d{2}_)+)")


def contract_ids() -> list[str]:
    return _CONTRACT_ID.findall((ROOT / "docs" / "contract.md").read_text(encoding="utf-8"))


def ids_in_test_names() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for prefix in _TEST_IDS.findall(path.read_text(encoding="utf-8")):
            found.update(re.findall(r"[TAH]\d{2}", prefix))
    return found


def test_every_behaviour_of_the_contract_has_a_test_named_for_it():
    ids = contract_ids()
    assert len(ids) == len(set(ids)) == 24 + 26 + 2
    assert sorted(set(ids) - ids_in_test_names()) == []


def test_every_id_a_test_names_is_in_the_contract():
    assert sorted(ids_in_test_names() - set(contract_ids())) == []


DUMP = "JSON.stringify({keys: Object.keys(ctx).sort(), workdir: ctx.workdir, session: ctx.session, " \
       "agent: ctx.agent, config: ctx.config})"


def test_T11_tools_and_hooks_of_one_run_get_the_same_ctx(rig):
    rig.write_tool("probe", f"""module.exports = {{ description: "Dumps ctx.", parameters: {{ type: "object" }},
      execute(ctx) {{ return {DUMP}; }} }};""")
    rig.write_hook("probe", f"""module.exports = {{
      beforeToolExecute(ctx, call) {{ ctx.log({DUMP}); }},
      afterRun(ctx, e) {{ ctx.log({DUMP}); }} }};""")
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "same.md").write_text(
        "---\nmodel: scripted/script.yaml\ntools: [probe]\nhooks: [probe]\n---\nLook.\n")
    (rig.home / "config.yaml").write_text("auto_approve: false\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump(
        [{"text": "", "tool_calls": [{"name": "probe", "arguments": {}}]}, {"text": "seen"}]))
    ui = NonInteractiveUI()
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("same").run("go", ui)
    assert result.reason == "end_turn", result.error
    before_tool, after_run = (json.loads(e.text) for e in ui.events if isinstance(e, Log))
    in_tool = json.loads(result.tool_calls[0][1].text)
    assert in_tool == before_tool == after_run
    assert in_tool["session"] == {"id": result.session_id}
    assert in_tool["agent"]["id"] == "same" and in_tool["config"] == {"auto_approve": False}
    assert in_tool["keys"] == ["agent", "config", "confirm", "env", "file", "http", "log", "notify", "session",
                               "subagent", "system", "workdir"]


def test_A01_an_agent_is_markdown_with_front_matter_whose_body_is_the_system_prompt(rig):
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "terse.md").write_text(
        "---\ndescription: Answers tersely.\nmodel: probe/m\ntools: [read]\nhooks: []\n---\nOne word answers.\n")
    agent, diagnostics = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).agent("terse")
    assert (agent.id, agent.description, agent.model, agent.tools, agent.hooks, agent.system) == (
        "terse", "Answers tersely.", "probe/m", ("read",), (), "One word answers.")
    assert agent.path == str(rig.home / "agents" / "terse.md") and diagnostics == []


CARD = "4111111111111111"


def test_A02_the_session_is_saved_as_it_happens_and_after_model_response_runs_before_the_save(rig, monkeypatch):
    rig.write_hook("redact", """module.exports = { afterModelResponse(ctx, r) {
      const saved = ctx.file.exists("seen.txt") ? ctx.file.read("seen.txt") : "";
      ctx.file.write("seen.txt", saved + "|" + r.text);
      return { text: r.text.replace(/\\b\\d{16}\\b/g, "[card]") }; } };""")
    rig.write_tool("peek", """module.exports = { description: "Reads the session so far.",
      parameters: { type: "object" },
      execute(ctx) { return ctx.file.read(ctx.env.SESSION_DIR + "/" + ctx.session.id + ".jsonl"); } };""")
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "careful.md").write_text(
        "---\nmodel: scripted/script.yaml\ntools: [peek]\nhooks: [redact]\n---\nCareful.\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump([
        {"text": f"Your card {CARD}.", "tool_calls": [{"name": "peek", "arguments": {}}]},
        {"text": f"Still {CARD}."}]))
    monkeypatch.setenv("SESSION_DIR", str(rig.home / "sessions"))
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("careful").run(
        "go", NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    during = result.tool_calls[0][1].text  # the file as the tool saw it, mid-run
    assert '"role": "user"' in during and "Your card [card]." in during and CARD not in during
    saved = (rig.home / "sessions" / f"{result.session_id}.jsonl").read_text()
    assert CARD not in saved and "Still [card]." in saved
    assert (rig.workdir / "seen.txt").read_text() == f"|Your card {CARD}.|Still {CARD}."
