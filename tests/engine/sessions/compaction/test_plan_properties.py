"""Compaction plans against the vendors' own request types, on random histories.

Random sessions (prompts, answers, tool calls and their results, error results, results
saved later than their call, ``agent`` sub-agent calls, non-ASCII text, pinned prompts)
are compacted by :func:`plan_compaction` at every ``keep_recent_tokens`` from 0 to the
whole, and again and again as the session grows (each view, with a summary, fed back as
``previous``). Each request is made by Rienda's own request builders for OpenAI,
Anthropic and Ollama and checked by the vendors' types (``tests/helpers/vendors.py``),
and: no orphan result, every call in the request answered by its own saved result; the
first prompt and the pinned ones byte-identical; never a loop (planning again at once
folds nothing; a fold makes the request smaller).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from rienda_kernel.engine.providers import ModelRequest, ToolSpec
from rienda_kernel.engine.providers import anthropic, ollama, openai
from rienda_kernel.engine.sessions.compaction.plan import plan_compaction, view_tokens
from rienda_kernel.engine.sessions.compaction.view import Compacted, request_messages
from rienda_kernel.engine.sessions.fill import estimate_message
from rienda_kernel.engine.sessions.messages import Message, ToolCall
from rienda_kernel.engine.sessions.pairing import for_vendors

from ....helpers.vendors import Rejected, fake_anthropic, fake_openai, validate_ollama_request

WORDS = ["read", "the", "file", "naïve", "café", "日本語", "Größe", "🙂", "ok", "données", "λ", "x" * 30]
TOOLS = [ToolSpec(name, f"The {name} tool.", {"type": "object", "properties": {"path": {"type": "string"}}})
         for name in ("read", "shell", "agent")]
VALIDATORS = {"openai": (openai.request_body, fake_openai().validate_request),
              "anthropic": (anthropic.request_body, fake_anthropic().validate_request),
              "ollama": (ollama.request_body, validate_ollama_request)}


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


class Session:
    """A random session growing one exchange at a time: ``history`` and ``pins``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.history: list[Message] = []
        self.pins: set[int] = set()
        self.late: list[Message] = []  # results to be saved after the next prompt
        self.calls = 0

    def grow(self) -> None:
        rng = self.rng
        self.history.append(Message.user(_text(rng, rng.randint(1, 40))))
        if rng.random() < 0.25:
            self.pins.add(len(self.history) - 1)
        if rng.random() < 0.2:  # a pin on an earlier prompt, maybe one folded already
            self.pins.add(rng.choice([i for i, m in enumerate(self.history) if m.role == "user"]))
        self.history += self.late
        self.late = []
        for _ in range(rng.randint(0, 3)):
            self._tool_turn()
        self.history.append(Message("assistant", _text(rng, rng.randint(1, 30))))

    def _tool_turn(self) -> None:
        rng = self.rng
        calls = []
        for _ in range(rng.randint(1, 3)):
            self.calls += 1
            name = rng.choice(["read", "shell", "agent"])
            calls.append(ToolCall(f"call_{self.calls}", name, {"path": _text(rng, 2)}))
        self.history.append(Message("assistant", _text(rng, rng.randint(0, 8)), tool_calls=tuple(calls)))
        results = []
        for call in calls:
            meta = {"subagent": {"session_id": f"sub-{call.id}"}} if call.name == "agent" else {}
            size = rng.choice([3, 20, 150, 400])  # words: the longest are pruned
            results.append(Message.tool_result(call, _text(rng, size), rng.random() < 0.2, meta))
        rng.shuffle(results)  # results in any order
        if rng.random() < 0.15:  # the last call's result saved later, after the next prompt
            self.late.append(results.pop())
        self.history += results


def _request(history: list[Message], view: Compacted | None) -> ModelRequest:
    return ModelRequest("model-x", "Be brief.", for_vendors(request_messages(history, view)), TOOLS)


def _check_request(history: list[Message], view: Compacted | None, pins: set[int]) -> None:
    viewed = request_messages(history, view)
    request = ModelRequest("model-x", "Be brief.", for_vendors(viewed), TOOLS)
    sent = {id(message) for message in request.messages}
    orphans = [m.tool_call_id for m in viewed if m.role == "tool" and id(m) not in sent]
    assert not orphans, f"results whose call was folded away: {orphans}"
    for vendor, (body_of, validate) in VALIDATORS.items():
        try:
            validate(body_of(request, {"max_tokens": 64}))
        except (Rejected, ValueError, AssertionError) as exc:
            raise AssertionError(f"{vendor} refuses the request: {exc}") from exc
    _check_results(history, view, request.messages)
    _check_kept_prompts(history, pins, request)


def _check_results(history: list[Message], view: Compacted | None, sent: list[Message]) -> None:
    """Each call sent is answered right after it by its own saved result (its stub when
    pruned); a stand-in only for a call whose result is not saved yet."""
    pruned = view.pruned if view else {}
    saved = {m.tool_call_id: (i, m) for i, m in enumerate(history) if m.role == "tool"}
    for position, message in enumerate(sent):
        answers = sent[position + 1:position + 1 + len(message.tool_calls)]
        for call, answer in zip(message.tool_calls, answers, strict=True):
            assert answer.role == "tool" and answer.tool_call_id == call.id, (call, answer)
            if call.id not in saved:
                assert answer.meta.run_ended, answer
                continue
            index, original = saved[call.id]
            expected = replace(original, text=pruned[index]) if index in pruned else original
            assert answer == expected, f"{call.id} is answered by a stand-in, not its saved result: {answer}"


def _check_kept_prompts(history: list[Message], pins: set[int], request: ModelRequest) -> None:
    """The first prompt and every pinned one are sent as they were saved, in order, in
    every vendor's body."""
    kept = sorted({0} | pins)
    texts = [m.text for m in request.messages if m.role == "user"]
    wires = {vendor: body_of(request) for vendor, (body_of, _) in VALIDATORS.items()}
    blocks = [b for turn in wires["anthropic"]["messages"] if turn["role"] == "user" for b in turn["content"]]
    for index in kept:
        text = history[index].text
        assert text in texts, f"prompt {index} is not sent as saved"
        assert {"role": "user", "content": text} in wires["openai"]["messages"]
        assert {"role": "user", "content": text} in wires["ollama"]["messages"]
        assert {"type": "text", "text": text} in blocks
    if len({history[index].text for index in kept}) == len(kept):  # random texts may repeat
        order = [texts.index(history[index].text) for index in kept]
        assert order == sorted(order), "the kept prompts are out of order"


def _compacted(history, previous, pins, keep, summary):
    """One compaction as the compactor makes it (a summary only when it folds; rejected,
    the view left as it was, when it does not make the request smaller), checked."""
    plan = plan_compaction(history, previous, pins, keep, fold=True, besides=0)
    sent = {pin for pin in pins if previous is None or pin in previous.head or pin >= previous.tail_from}
    _check_request(history, plan.view, pins if plan.folded else sent)  # a folded pin is back at the next fold
    if not plan.folded:
        return plan.view if plan.pruned else previous
    start = previous.tail_from if previous else 0
    brought_back = set(plan.view.head) - set(previous.head if previous else ()) - set(range(start, len(history)))
    if not brought_back:  # a pin on a prompt folded before brings it back: that may outweigh the fold
        assert view_tokens(history, plan.view) < view_tokens(history, previous), "a fold that does not shrink"
    view = plan.view.with_summary(summary)
    _check_request(history, view, pins)
    if view_tokens(history, view) >= view_tokens(history, previous):
        return previous  # the compactor rejects it: the summary outweighs what was folded
    again = plan_compaction(history, view, pins, keep, fold=True, besides=0)
    assert not again.folded and not again.pruned, f"planning again at once folds {again.folded}"
    return view


@pytest.mark.parametrize("seed", range(12))
def test_every_cut_of_a_random_session_makes_requests_every_vendor_accepts(seed):
    session = Session(seed)
    for _ in range(6):
        session.grow()
    history, pins = session.history, session.pins
    _check_request(history, None, pins)
    whole = sum(estimate_message(m) for m in history)
    for keep in range(0, whole + 2, max(1, whole // 60)):
        _compacted(history, None, pins, keep, "S")
    assert _compacted(history, None, pins, whole + 1, "S") is None  # all of it kept: nothing folded


@pytest.mark.parametrize("seed", range(12))
def test_a_growing_session_compacted_again_and_again_stays_valid(seed):
    session = Session(1000 + seed)
    view, compactions = None, 0
    keep = session.rng.choice([0, 40, 150, 400])
    for step in range(25):
        session.grow()
        previous = view
        view = _compacted(session.history, view, session.pins, keep, f"S{step} café 🙂")
        compactions += view is not previous and view.summary != (previous.summary if previous else None)
    assert compactions >= 5


def test_the_checks_catch_a_broken_request():
    """Each check fails on a request made wrong on purpose (else it proves nothing)."""
    session = Session(7)
    for _ in range(4):
        session.grow()
    history = session.history
    plan = plan_compaction(history, None, set(), 0, fold=True)
    call_at = next(i for i, m in enumerate(history) if m.tool_calls)
    orphaned = history[:call_at] + history[call_at + 1:]  # a result without its call, its call's id kept
    broken = _request(orphaned, None)
    broken.messages[:] = request_messages(orphaned, None)  # not paired by for_vendors
    for vendor, (body_of, validate) in VALIDATORS.items():
        with pytest.raises((Rejected, AssertionError)):
            validate(body_of(broken))
    request = _request(history, plan.view.with_summary("S"))
    assert request.messages[0] == history[0]
    with pytest.raises(AssertionError, match="is not sent as saved"):
        _check_kept_prompts(history, set(), replace(request, messages=request.messages[1:]))
    stand_in = for_vendors(history[:call_at + 1])  # every call answered by a stand-in
    with pytest.raises(AssertionError, match="stand-in"):
        _check_results(history, None, stand_in)
