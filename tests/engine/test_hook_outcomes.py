"""The hook chain reports each hook's outcome itself (``HookChain(..., on_outcome)``): the
hook, what its handler returned or failed with, and the decision the ledger recorded, in
order, right after that decision; and it needs of a sandbox only ``call_chain``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rienda_kernel.engine import HookDecision, Log, SandboxError, ToolResult
from rienda_kernel.engine.hooks import HookChain, HookOutcome, declared_hooks
from rienda_kernel.engine.sandbox.chain import JSValue

from ..helpers.extensions import go, hook


def reporting(rig, names, closed=()):
    """A chain of ``names`` (those in ``closed`` fail-closed) and the outcomes it reports;
    each outcome is checked to come after its decision, before the next hook's."""
    outcomes: list[HookOutcome] = []

    def heard(outcome: HookOutcome) -> None:
        assert rig.events(HookDecision)[-1] == outcome.decision, "reported before its decision was recorded"
        assert len(rig.events(HookDecision)) == len(outcomes) + 1, "a decision came without its outcome"
        outcomes.append(outcome)

    hooks = declared_hooks(rig.catalog().hooks, names, closed)
    return HookChain(hooks, rig.sandbox, rig.run_context(), heard), outcomes


def test_each_hook_is_reported_in_order_with_what_it_returned_or_threw_and_its_decision(rig):
    rig.write_hook("bang", hook(afterToolExecute='function (ctx, c, r) { return { text: r.text + "!" }; }'))
    rig.write_hook("broken", hook(afterToolExecute='function () { throw new Error("oops"); }'))
    rig.write_hook("quiet", hook(afterToolExecute="function () {}"))
    rig.write_hook("number", hook(afterToolExecute="function () { return 42; }"))
    chain, outcomes = reporting(rig, ["bang", "broken", "quiet", "number"])
    assert chain.after_tool_execute("c1", "t", {}, ToolResult("ok"), go()) == ToolResult("ok!")
    assert [o.hook.name for o in outcomes] == ["bang", "broken", "quiet", "number"]
    assert [o.returned for o in outcomes] == [JSValue("object", {"text": "ok!"}), None, JSValue("undefined"),
                                              JSValue("number", 42)]
    assert isinstance(outcomes[1].outcome, SandboxError) and "Error: oops" in str(outcomes[1].outcome)
    assert [o.decision for o in outcomes] == rig.events(HookDecision)
    assert [(o.decision.point, o.decision.effect) for o in outcomes] == [
        ("afterToolExecute", "rewrote"), ("afterToolExecute", "threw"), ("afterToolExecute", "none"),
        ("afterToolExecute", "invalid")]
    assert all(o.decision.duration_ms >= 0 for o in outcomes)


def test_a_refusal_is_the_last_outcome_reported(rig):
    rig.write_hook("allow", hook(beforeToolExecute='function () { return { allow: true, reason: "fine" }; }'))
    rig.write_hook("deny", hook(beforeToolExecute='function () { return { allow: false, reason: "no" }; }'))
    rig.write_hook("later", hook(beforeToolExecute='function (ctx) { ctx.log("consulted"); }'))
    chain, outcomes = reporting(rig, ["allow", "deny", "later"])
    assert not chain.before_tool_execute("c1", "shell", {}, go()).allowed
    assert [(o.hook.name, o.returned, o.decision.effect) for o in outcomes] == [
        ("allow", JSValue("object", {"allow": True, "reason": "fine"}), "none"),
        ("deny", JSValue("object", {"allow": False, "reason": "no"}), "refused")]
    assert rig.events(Log) == []


def test_a_fail_closed_failure_is_reported_with_its_error(rig):
    rig.write_hook("broken", hook(beforeToolExecute='function () { throw new Error("policy unreadable"); }'))
    rig.write_hook("later", hook(beforeToolExecute='function (ctx) { ctx.log("consulted"); }'))
    chain, outcomes = reporting(rig, ["broken", "later"], {"broken"})
    assert chain.before_tool_execute("c1", "shell", {}, go()).refused_by == "broken"
    [outcome] = outcomes
    assert outcome.returned is None and "policy unreadable" in str(outcome.outcome)
    assert (outcome.decision.effect, outcome.decision.failed_closed) == ("refused", True)


class OnlyCallChain:
    """What the chain needs of a sandbox and nothing else: each link's outcome as given, or
    SandboxError after ``runs`` links (a sandbox that could not run the rest)."""

    def __init__(self, outcomes, runs=None):
        self.outcomes, self.runs = outcomes, runs

    def call_chain(self, links, export, payload, rule, host_for, cancel, frozen=(), on_step=None):
        for index, _ in enumerate(links):
            if index == self.runs:
                raise SandboxError("a V8 worker did not start")
            on_step(index, self.outcomes[index])


@pytest.mark.parametrize("runs", [None, 1])
def test_the_chain_runs_on_anything_that_has_call_chain_and_reports_hooks_it_could_not_run(rig, runs):
    rig.write_hook("a", hook(beforeModelRequest="function () {}"))
    rig.write_hook("b", hook(beforeModelRequest="function () {}"))
    catalog = rig.catalog()
    given = [JSValue("object", {"system": "first"}), JSValue("object", {"system": "second"})]
    outcomes: list[HookOutcome] = []
    chain = HookChain([catalog.hooks["a"], catalog.hooks["b"]], OnlyCallChain(given, runs), rig.run_context(),
                      outcomes.append)
    system = chain.before_model_request("s", "m", [], go())
    if runs is None:
        assert system == "second"
        assert [(o.hook.name, o.returned, o.decision.effect) for o in outcomes] == [
            ("a", given[0], "rewrote"), ("b", given[1], "rewrote")]
    else:
        assert system == "first"
        assert [(o.hook.name, o.returned, o.decision.effect) for o in outcomes] == [
            ("a", given[0], "rewrote"), ("b", None, "threw")]
        assert str(outcomes[1].outcome) == "a V8 worker did not start"


def test_without_on_outcome_the_chain_only_records(rig):
    rig.write_hook("bang", hook(afterToolExecute='function (ctx, c, r) { return { text: r.text + "!" }; }'))
    chain = HookChain([rig.catalog().hooks["bang"]], rig.sandbox, rig.run_context())
    assert chain.on_outcome is None
    assert chain.after_tool_execute("c1", "t", {}, ToolResult("ok"), go()) == ToolResult("ok!")
    assert [d.effect for d in rig.events(HookDecision)] == ["rewrote"]
    assert replace(rig.events(HookDecision)[0], duration_ms=0) == HookDecision(
        hook="bang", point="afterToolExecute", effect="rewrote", call_id="c1",
        changes={"text": {"before_chars": 2, "after_chars": 3}})
