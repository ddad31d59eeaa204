"""A tool result as every front end previews it: JSON pretty-printed, short containers on
one line, rows of scalars, the first lines and how many more; anything else as it is."""

from __future__ import annotations

import json

from rienda_kernel.frontend.previews import preview, readable


def test_json_is_pretty_printed_with_short_containers_on_one_line():
    text = json.dumps({"content": [{"type": "text", "text": "hi"}], "deep": {"a": {"b": ["x" * 80]}}})
    assert readable(text).splitlines() == [
        "{", '  "content": [{"type": "text", "text": "hi"}],', '  "deep": {', '    "a": {', '      "b": [',
        '        "' + "x" * 80 + '"', "      ]", "    }", "  }", "}"]


def test_scalars_share_rows_and_the_text_after_the_json_is_kept():
    shown = readable(json.dumps(list(range(30))) + "\n\nexit code 0").splitlines()
    rows = shown[1:-3]
    assert shown[0] == "[" and len(rows) == 2 and all(len(row) <= 76 for row in rows)
    assert " ".join(row.strip() for row in rows) == ", ".join(map(str, range(30)))
    assert shown[-3:] == ["]", "", "exit code 0"]


def test_what_is_not_json_stays_as_it_is():
    for text in ("plain words", "{not json", "[1] trailing on the same line", "[]", "{}", '"a string"', "42", ""):
        assert readable(text) == text


def test_preview_cuts_lines_and_width_and_counts_what_it_left_out():
    shown = preview("\n".join(f"line {n} " + "y" * 300 for n in range(20)), max_lines=3, width=10)
    assert shown.lines == ["line 0 yyy…", "line 1 yyy…", "line 2 yyy…"]
    assert shown.more_line("-v shows all") == "… 17 more lines (-v shows all)"
    whole = preview("a\nb", None, None)
    assert (whole.lines, whole.more_line("x")) == (["a", "b"], None)
    assert preview("one").more_line("x") is None


def test_deep_or_huge_json_is_shown_as_it_is():
    deep = "[" * 5000 + "]" * 5000
    assert readable(deep) == deep
    huge = json.dumps({"a": "z" * (1024 * 1024 + 10)})
    assert readable(huge) == huge
