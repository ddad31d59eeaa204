"""Compaction against the real thing: llama.cpp's own server (``xllamacpp``, SmolLM2) with a
window of 1,024 tokens, the agent on it at temperature 0 with a small ``max_tokens``.

Every request goes through a relay (``fake_openai(upstream=...)``) that checks it with the
``openai`` package's types and Chat Completions' pairing rules and counts it; the server
then takes it or refuses it. A session driven past the window keeps working through
compactions; with ``compaction: false`` it ends in the one overflow line and resumes once
compaction is back on; the server's own refusal is compacted once and retried; a prompt
longer than the window is one line after at most one compaction. The same skip/fail rule
as ``test_real_model.py``: CI installs the server, a laptop without it skips.
"""

from __future__ import annotations

from contextlib import contextmanager

import httpx
import pytest

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.sessions.compaction.summary import SYSTEM

from ...helpers.homes import session_lines
from ...helpers.vendors import fake_openai
from ...helpers.real_llama import engine_for, keyless, require_llama, started  # noqa: F401 (a fixture)

N_CTX = 1024
N_PREDICT = 64
PARAGRAPH = ("The harbour office logs every ship that enters: its name, its flag, its cargo and the berth "
             "it was given. Today the {n}th entry reads: the Maren Lind, Norwegian, timber from Bergen, "
             "berth {n}; the pilot came aboard at the outer buoy and the tide was turning. ")


@pytest.fixture(scope="module")
def window1k(tmp_path_factory):
    """The origin of a llama.cpp server whose window is :data:`N_CTX` tokens, for this module."""
    require_llama()
    with started(tmp_path_factory.mktemp("llama-1k"), n_ctx=N_CTX) as (origin, _):
        yield origin


@contextmanager
def relayed(origin):
    """A relay to ``origin`` checking every request with OpenAI's types; the server's own
    refusals (not stream events) are the only thing it may not take as events. The server
    writes at most :data:`N_PREDICT` tokens of any answer (the toy model fills every
    summary's ``max_tokens``, 256 here, at about 30 tokens a second on one thread): a summary
    is cut at a length limit either way, as the product's requests ask."""
    relay = fake_openai(upstream=origin)
    relay.upstream_fields["n_predict"] = N_PREDICT  # llama.cpp's own cap, which outranks max_tokens
    relay.gets["/props"] = httpx.get(origin + "/props", timeout=30).json()  # the server's window, as it reports it
    try:
        yield relay
    finally:
        relay.close()
    problems = [p for p in relay.problems if "exceed_context_size_error" not in p]
    assert not problems, problems


def config(relay, **local):
    """config.yaml: the local endpoint through ``relay``; answers of at most 8 tokens (the
    prompts fill the window: a token generated costs the one thread two or three taken in)."""
    return {"providers": {"local": {"api": "openai", "base_url": relay.url, "max_tokens": 8,
                                    "extra_body": {"temperature": 0}, **local}}}


def prompt(n, repeat=3):
    return f"Note {n}. " + PARAGRAPH.format(n=n) * repeat + "Reply with one word."


def compactions(rig, session_id):
    return [line for line in session_lines(rig.home, session_id) if line.get("type") == "compaction"]


def turns(bodies):
    """The agent's requests among ``bodies`` (the summariser's left out)."""
    return [body for body in bodies if body["messages"][0]["content"] != SYSTEM]


def answered(result):
    """Ended as the existing real-model tests allow: end_turn, or the toy model's max_tokens cut-off."""
    return result.error is None or "the answer was cut off at the model's length limit" in result.error


def test_a_session_past_the_window_keeps_working_through_compactions(rig, window1k, keyless):
    with relayed(window1k) as relay:
        engine = engine_for(rig, config(relay))
        conversation = engine.conversation("small")
        for n in range(1, 15):
            result = conversation.run(prompt(n, repeat=1), NonInteractiveUI())
            assert answered(result), (n, result.error)
        records = compactions(rig, conversation.session_id)
        done = [r for r in records if r["outcome"] == "compacted"]
        print(f"requests {len(relay.requests)}, compactions {[(r['tokens_before'], r['tokens_after']) for r in done]}")
    assert len(done) >= 2 and all(r["reason"] == "auto" and r["tokens_after"] < r["tokens_before"] for r in done)
    assert all(r["folded_count"] > 0 and r["summary"] for r in done)
    summarised = [r for r in records if r["outcome"] in ("compacted", "rejected")]  # a rejected summary was written too
    assert len(turns(relay.requests)) == 14 and len(relay.requests) == 14 + len(summarised)  # one summariser request each


def test_compaction_off_ends_in_one_line_and_the_session_resumes_with_it_on(rig, window1k, keyless):
    with relayed(window1k) as relay:
        engine = engine_for(rig, {**config(relay), "compaction": False})
        conversation = engine.conversation("small")
        for n in range(1, 30):
            result = conversation.run(prompt(n), NonInteractiveUI())
            if not answered(result):
                break
        assert result.reason == "error" and "\n" not in result.error, result.error
        assert "compaction is off" in result.error and f"session {result.session_id} is kept" in result.error
        assert compactions(rig, result.session_id) == []
        refused = len(relay.requests)

        engine = engine_for(rig, config(relay))  # compaction back on
        resumed = engine.conversation("small", result.session_id).run("Say OK.", NonInteractiveUI())
        [record] = compactions(rig, result.session_id)
        print(f"refused at prompt {n}, request {refused}; resumed: {record['tokens_before']} -> {record['tokens_after']}")
    assert answered(resumed), resumed.error
    assert record["outcome"] == "compacted" and record["reason"] == "auto"
    assert resumed.messages[-1].role == "assistant" and resumed.messages[-1].text


def test_the_servers_own_refusal_is_compacted_once_and_the_retry_accepted(rig, window1k, keyless):
    with relayed(window1k) as relay:
        engine = engine_for(rig, config(relay, context_window=8192))  # automatic compaction never fires
        conversation = engine.conversation("small")
        for n in range(1, 30):
            result = conversation.run(prompt(n), NonInteractiveUI())
            assert answered(result), (n, result.error)
            if compactions(rig, conversation.session_id):
                break
        [record] = compactions(rig, conversation.session_id)
        print(f"overflow at prompt {n}: {record['tokens_before']} -> {record['tokens_after']}, "
              f"requests {len(relay.requests)}")
    assert (record["outcome"], record["reason"]) == ("compacted", "overflow")
    refused, summariser, retried = relay.requests[-3:]
    assert summariser["messages"][0]["content"] == SYSTEM
    assert retried["messages"][-1] == refused["messages"][-1] and len(str(retried)) < len(str(refused))


def test_a_prompt_longer_than_the_window_is_one_line_after_at_most_one_compaction(rig, window1k, keyless):
    with relayed(window1k) as relay:
        engine = engine_for(rig, config(relay))
        conversation = engine.conversation("small")
        assert answered(conversation.run(prompt(1), NonInteractiveUI()))
        before = len(relay.requests)
        result = conversation.run(prompt(2, repeat=60), NonInteractiveUI())
        asked = relay.requests[before:]
    records = compactions(rig, conversation.session_id)
    print(f"requests for the long prompt: {len(asked)}, records {[(r['outcome'], r['reason']) for r in records]}")
    assert result.reason == "error" and "\n" not in result.error, result.error
    assert "no longer fits local/smollm2's context window" in result.error
    assert len(records) <= 1 and len(turns(asked)) <= 2
    assert [m.role for m in engine.store.load(result.session_id).messages][-1] == "user"  # kept for a resume

