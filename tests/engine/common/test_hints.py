"""The one "did you mean" hint: its words, its cutoff, and that the package writes the
hint nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

from rienda_kernel.engine import did_you_mean
from rienda_kernel.engine.common.hints import LEADING_HINT, closest

PACKAGE = Path(__file__).resolve().parents[3] / "rienda_kernel"


def test_the_closest_known_word_quoted_in_parentheses_or_nothing():
    assert did_you_mean("max_turn", ["max_turns", "max_depth"]) == " (did you mean 'max_turns'?)"
    assert did_you_mean("mystery", ["max_turns", "max_depth"]) == ""
    assert did_you_mean("anything", []) == ""


def test_a_key_that_is_not_a_string_is_compared_as_written():
    assert did_you_mean(1, ["1a", "b"]) == " (did you mean '1a'?)"
    assert did_you_mean(None, ["Nine", "x"]) == " (did you mean 'Nine'?)"


def test_the_cutoff_decides_how_close_is_close_enough():
    assert did_you_mean("always", ["ask", "allow", "deny"]) == ""
    assert did_you_mean("always", ["ask", "allow", "deny"], cutoff=0.5) == " (did you mean 'allow'?)"


def test_a_place_may_write_the_word_its_own_way():
    assert did_you_mean("tols", ["tools", "help"], shown=lambda name: f"/{name}") == " (did you mean /tools?)"
    assert did_you_mean("max_tokenz", ["max_tokens"], shown=str) == " (did you mean max_tokens?)"
    assert did_you_mean("opnai", ["openai", "ollama"], form=LEADING_HINT) == "did you mean 'openai'? "


def test_closest_gives_the_words_best_first():
    assert closest("sesion-2", ["session-1", "session-2", "other"], n=3) == ["session-2", "session-1"]
    assert closest("zzz", ["session-1"]) == []


def test_the_package_writes_the_hint_only_through_the_helper():
    """No module but hints.py calls difflib's matcher or writes "did you mean {...}" itself."""
    own = PACKAGE / "engine" / "common" / "hints.py"
    written = re.compile(r"get_close_matches|did you mean \{")
    offending = [f"{path.relative_to(PACKAGE)}:{number}" for path in sorted(PACKAGE.rglob("*.py")) if path != own
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if written.search(line)]
    assert offending == []
