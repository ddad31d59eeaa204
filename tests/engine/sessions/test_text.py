"""Foreign text is repaired once at the boundary: lone surrogates become U+FFFD."""

from rienda_kernel.engine.sessions.text import REPLACEMENT, repair


def test_a_lone_surrogate_becomes_the_replacement_character():
    assert repair("abc\ud83d") == "abc" + REPLACEMENT
    assert repair("\udc00 then text") == REPLACEMENT + " then text"


def test_a_pair_split_over_two_code_points_is_joined():
    assert repair("\ud83d\ude00!") == "😀!"


def test_keys_and_nested_values_are_repaired():
    assert repair({"k\ud800": ["x\udfff", ("\ud800",)], "n": 1}) == {
        "k" + REPLACEMENT: ["x" + REPLACEMENT, (REPLACEMENT,)], "n": 1}


def test_well_formed_text_is_returned_as_is():
    text = "déjà vu 😀"
    assert repair(text) is text
    assert repair(text).encode("utf-8")
