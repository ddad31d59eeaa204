"""beforeCompact and afterCompact (H23-H26) through real V8, the scripted model (with a small
``context_window``, reporting its usage from the estimate) and, where the request itself
must be seen, a real HTTP server speaking OpenAI's wire format."""

from __future__ import annotations

import json

import yaml

from rienda_kernel.engine import HookDecision, Log, NonInteractiveUI
from rienda_kernel.engine.events import Compaction
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.compaction.view import SUMMARY_OPENING, request_messages
from rienda_kernel.engine.testing.replay import replay_session

from ...helpers.homes import session_lines, write_agent_file, write_script
from ...helpers.vendor_streams.openai import text_stream
from ...helpers.vendor_wire import serving
from ...helpers.vendors import fake_openai

WORDS = "lorem ipsum dolor sit amet " * 12
LOG_PAYLOAD = """
    module.exports = { beforeCompact(ctx, c) {
      ctx.log(JSON.stringify({reason: c.reason, tokens: c.tokens, window: c.window, n: c.messages.length,
                              first: c.messages[0], instructions: c.instructions}));
      try { c.messages.push({role: "user", text: "x"}); ctx.log("pushed"); } catch (e) { ctx.log("read-only"); }
    } };
"""


def long_agent(rig, hooks=(), window=600, model="scripted/script.yaml", name="long"):
    write_agent_file(rig.home, name, f"---\ndescription: A long session.\nmodel: {model}\nhooks: {list(hooks)}\n"
                                     f"options:\n  context_window: {window}\n---\nYou help.\n")
    write_script(rig.workdir, [{"text": f"Answer {i}: {WORDS}"} for i in range(12)])
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def prompts(engine, count, ui=None, agent="long"):
    """Run ``count`` prompts in one session; the events of all of them and the session id."""
    ui = ui or NonInteractiveUI()
    conversation = engine.conversation(agent)
    for index in range(count):
        result = conversation.run(f"prompt {index + 1}: go on", ui)
        assert (result.reason, result.error) == ("end_turn", None)
    return ui.events, conversation


def compactions(rig, session_id):
    return [line for line in session_lines(rig.home, session_id) if line.get("type") == "compaction"]


def test_H23_beforeCompact_gets_the_reason_the_fill_the_window_and_a_read_only_snapshot(rig):
    rig.write_hook("watch", LOG_PAYLOAD)
    events, conversation = prompts(long_agent(rig, ["watch"]), 6)
    [record] = compactions(rig, conversation.session_id)
    logs = [e.text for e in events if isinstance(e, Log)]
    seen = json.loads(logs[0])
    assert seen == {"reason": "auto", "tokens": record["tokens_before"], "window": 600, "n": record["upto"],
                    "first": {"role": "user", "text": "prompt 1: go on"}, "instructions": ""}
    assert logs[1] == "read-only"
    assert record["tokens_before"] > 600 - 150  # past window - reserve (a quarter of 600)


def test_H24_cancel_ends_the_chain_and_the_compaction_and_the_run_goes_on(rig):
    rig.write_hook("keep", "module.exports = { beforeCompact() { return {cancel: true, reason: 'audit'}; } };")
    rig.write_hook("later", "module.exports = { beforeCompact(ctx) { ctx.log('later ran'); } };")
    events, conversation = prompts(long_agent(rig, ["keep", "later"]), 6)
    [record] = compactions(rig, conversation.session_id)
    assert (record["outcome"], record["by"]) == ("cancelled", "keep")
    assert not [e for e in events if isinstance(e, Log)]  # no later hook was consulted
    [event] = [e for e in events if isinstance(e, Compaction)]
    assert event.message == "compaction cancelled by hook keep (audit)"
    assert conversation.compaction.view is None  # every message is still sent
    assert [(d.hook, d.effect) for d in events if isinstance(d, HookDecision)] == [("keep", "refused")]


def test_H24_a_supplied_summary_replaces_the_summariser_and_instructions_chain(rig):
    rig.write_hook("first", "module.exports = { beforeCompact() { return {instructions: 'Keep ticket numbers.'}; } };")
    rig.write_hook("second", "module.exports = { beforeCompact(ctx, c) { "
                             "return {instructions: c.instructions + ' Answer in English.', summary: 'S: ' + c.reason}; } };")
    _, conversation = prompts(long_agent(rig, ["first", "second"]), 6)
    [record] = compactions(rig, conversation.session_id)
    assert (record["summary"], record["summary_by"]) == ("S: auto", "second")
    assert record["instructions"] == "Keep ticket numbers. Answer in English."
    assert record["hooks"] == ["second: supplied the summary", "second: added instructions"]


def test_H24_H25_the_instructions_reach_the_summariser_and_afterCompact_rewrites_what_is_sent(rig):
    rig.write_hook("team", """
        module.exports = {
          beforeCompact() { return {instructions: 'Keep the team rule.'}; },
          afterCompact(ctx, c) { return {summary: c.summary + '\\nRULE: answer in English'}; },
        };""")
    with serving(fake_openai()) as server:
        (rig.home / "config.yaml").write_text(yaml.safe_dump({"providers": {"cloud": {
            "api": "openai", "base_url": server.url, "api_key_env": None}}}))
        engine = long_agent(rig, ["team"], model="cloud/gpt-4o", window=700)
        server.replies += [{"events": text_stream(f"Answer {i}: ", WORDS)} for i in range(5)]
        server.replies += [{"events": text_stream("Goal: prompts 1-4.")}, {"events": text_stream("Done.")}]
        _, conversation = prompts(engine, 5)
        assert conversation.compact(NonInteractiveUI()).outcome == "compacted"
        assert conversation.run("prompt 6: go on", NonInteractiveUI()).reason == "end_turn"
        bodies = list(server.requests)
    summariser, after = bodies[5], bodies[6]
    assert "Keep the team rule." in summariser["messages"][-1]["content"] and not summariser.get("tools")
    sent = [m["content"] for m in after["messages"] if m["role"] == "user"]
    assert sent[0] == "prompt 1: go on" and sent[-1] == "prompt 6: go on"
    assert SUMMARY_OPENING + "Goal: prompts 1-4.\nRULE: answer in English" in sent
    [record] = compactions(rig, conversation.session_id)
    assert record["summary"].endswith("RULE: answer in English") and record["saw"] == {
        "summary": {"of": len(record["summary"]), "pieces": [[0, len("Goal: prompts 1-4.")]]}}


def test_H26_a_throwing_compaction_hook_is_skipped_and_the_ledger_holds_it(rig):
    rig.write_hook("broken", "module.exports = { beforeCompact() { throw new Error('boom'); }, "
                             "afterCompact() { return {summary: 42}; } };")
    events, conversation = prompts(long_agent(rig, ["broken"]), 6)
    [record] = compactions(rig, conversation.session_id)
    assert record["outcome"] == "compacted" and record["summary"].startswith("## Goal")
    ledger = [(line["point"], line["effect"]) for line in session_lines(rig.home, conversation.session_id)
              if line.get("type") == "hook_decision"]
    assert ledger == [("beforeCompact", "threw"), ("afterCompact", "invalid")]


def test_H26_replay_gives_the_hooks_what_they_were_given_and_reports_a_changed_decision(rig):
    rig.write_hook("team", "module.exports = { afterCompact(ctx, c) { return {summary: c.summary + ' [team]'}; } };")
    engine = long_agent(rig, ["team"])
    _, conversation = prompts(engine, 6)
    same = replay_session(engine, conversation.session_id)
    assert (same.changed, same.compactions) == (False, [])
    rig.write_hook("team", "module.exports = { beforeCompact() { return {cancel: true}; } };")
    changed = replay_session(Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox), conversation.session_id)
    assert changed.changed and changed.compactions == [
        "compaction 1 (auto, after message 11): not cancelled when recorded, cancelled by hook team now"]


def test_a_resumed_session_makes_exactly_the_request_the_run_had_after_compacting(rig):
    engine = long_agent(rig)
    _, conversation = prompts(engine, 7)
    assert compactions(rig, conversation.session_id)
    live = request_messages(conversation.messages, conversation.compaction.view)
    resumed = engine.conversation("long", conversation.session_id)
    assert request_messages(resumed.messages, resumed.compaction.view) == live
    assert len(resumed.messages) == 14  # nothing was removed from the file


def test_H26_a_sub_agents_compaction_passes_the_leads_hooks_first(rig):
    rig.write_hook("lead-rule", "module.exports = { beforeCompact(ctx, c) { "
                                "ctx.log('lead sees ' + c.reason + ' in ' + (ctx.subagent ? ctx.subagent.agent : 'lead')); "
                                "return {instructions: 'from the lead'}; } };")
    rig.write_tool("big", """
        module.exports = { description: 'Big output.', parameters: {type: 'object', properties: {}},
                           execute() { return 'x'.repeat(1500); } };""")
    write_agent_file(rig.home, "child", "---\ndescription: Child.\nmodel: scripted/child.yaml\ntools: [big]\n"
                                        "options:\n  context_window: 2000\n---\nYou work.\n")
    write_agent_file(rig.home, "lead", "---\ndescription: Lead.\nmodel: scripted/lead.yaml\ntools: [agent]\n"
                                       "hooks: [lead-rule]\n---\nYou lead.\n")
    write_script(rig.workdir, [{"text": "Delegating.", "tool_calls": [{"name": "agent", "arguments": {
        "agent": "child", "prompt": "work"}}]}, {"text": "Done."}], name="lead.yaml")
    write_script(rig.workdir, [{"text": f"Step {i}.", "tool_calls": [{"name": "big", "arguments": {}}]}
                               for i in range(4)] + [{"text": "Child done."}], name="child.yaml")
    ui = NonInteractiveUI()
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("lead").run("go", ui)
    assert (result.reason, result.error) == ("end_turn", None)
    assert "lead sees auto in child" in [e.text for e in ui.events if isinstance(e, Log)]
    made = [e for e in ui.events if isinstance(e, Compaction)]
    assert made and all(event.depth == 1 and event.outcome == "compacted" for event in made)
    assert made[0].pruned >= 1 and not made[0].folded  # the older results were pruned, which was enough


def test_H24_an_empty_summary_is_the_summary_and_no_model_is_asked(rig):
    """A hook may supply an empty summary (the folded history must reach no model): the
    summariser is not asked, the folded messages are sent as nothing (issue 40)."""
    rig.write_hook("blank", "module.exports = { beforeCompact() { return {summary: ''}; } };")
    events, conversation = prompts(long_agent(rig, ["blank"]), 6)
    [record] = compactions(rig, conversation.session_id)
    assert (record["outcome"], record["summary"], record["summary_by"]) == ("compacted", None, "blank")
    assert record["hooks"] == ["blank: supplied the summary"]
    assert conversation.compaction.view is not None and conversation.compaction.view.summary is None
