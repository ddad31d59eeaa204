"""The notebook tools over a plain namespace (what a replay with --run-tools uses; the
notebook's own namespace is tested through real kernels in tests/jupyter/magics)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from rienda_kernel.engine import CancelToken
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine.builtins.notebook import PythonNamespace, execute, notebook_tools
from rienda_kernel.engine.builtins.variables import describe_variables


class Host:
    def __init__(self, cancel=None):
        self.cancel = cancel or CancelToken()


def test_code_reads_and_creates_variables_and_returns_what_it_printed_then_the_last_value():
    ns = PythonNamespace({"rows": [3, 4, 5]})
    text, failed = notebook_tools(ns)["python"].run(Host(), {"code": "print('summing')\ntotal = sum(rows)\ntotal * 2"})
    assert (text, failed) == ("summing\n24", False)
    assert ns.values["total"] == 12


def test_a_statement_without_output_says_so():
    assert execute(PythonNamespace(), "x = 1") == ("(no output)", False)


def test_an_exception_is_an_error_result_with_the_users_frames_and_lines():
    text, failed = execute(PythonNamespace(), "def f(d):\n    return d['missing']\nprint('before')\nf({})")
    assert failed
    assert text.startswith("before\nTraceback (most recent call last):")
    assert "return d['missing']" in text and text.endswith("KeyError: 'missing'")
    assert "rienda_kernel" not in text  # Rienda's own frames are left out


def test_a_syntax_error_is_an_error_result():
    text, failed = execute(PythonNamespace(), "x = (")
    assert failed and "SyntaxError" in text


def test_the_front_ends_transformation_and_display_are_used():
    shown = []
    ns = PythonNamespace(transform=lambda code: code.replace("%who", "sorted(k for k in globals() if k != '__builtins__')"),
                         display=shown.append)
    ns.values["a"] = 1
    assert execute(ns, "%who") == ("['a']", False)
    assert shown == [["a"]]


def test_variables_lists_the_users_names_without_internals_or_modules():
    import json

    ns = PythonNamespace({"json": json, "_hidden": 1, "In": [], "name": "Ada", "scores": [1, 2], "count": 7,
                          "shown": {"a": 1}}, hidden={"shown"})
    text, failed = describe_variables(ns)
    assert not failed
    assert text.splitlines() == ["count: int = 7", "name: str = 'Ada'", "scores: list = 2 items"]
    assert describe_variables(ns, "scores") == ("scores: list\n2 items: [1, 2]", False)
    text, failed = describe_variables(ns, "json")
    assert failed and "no user variable named 'json'" in text


def test_large_values_are_summarized_never_dumped():
    ns = PythonNamespace({"big": list(range(100_000)), "long": "x" * 50_000})
    text, _ = describe_variables(ns)
    assert len(text) < 300
    assert "100,000 items" in text and "50,000 characters" in text


def test_a_stopped_run_stops_waiting_for_code_that_runs_elsewhere():
    never: Future = Future()
    ns = PythonNamespace(run=lambda job: never)
    cancel = CancelToken()
    threading.Timer(0.05, cancel.cancel).start()
    with pytest.raises(Interrupted):
        notebook_tools(ns)["python"].run(Host(cancel), {"code": "while True: pass"})


def test_variables_leaves_out_what_was_imported_but_lists_what_the_notebook_defined():
    ns = PythonNamespace({"__name__": "__main__"})
    execute(ns, "from pathlib import Path\nfrom os.path import join\nfrom math import sqrt\n"
                "def mine(x):\n    return x\nclass Row:\n    pass\nrow = Row()")
    names = [line.split(":")[0] for line in describe_variables(ns)[0].splitlines()]
    assert names == ["Row", "mine", "row"]


class FakeTable:
    """What `variables` relies on of a pandas DataFrame (pandas is not a dependency)."""

    shape = (1_000_000, 2)
    columns = ["region", "units"]

    class dtypes:  # noqa: N801 - pandas' attribute name
        @staticmethod
        def to_string():
            return "region    object\nunits      int64"

    @staticmethod
    def head():
        class Head:
            @staticmethod
            def to_string():
                return "  region  units\n0  north     12"
        return Head()

    def __repr__(self):
        raise AssertionError("a table is never dumped")


def test_a_table_is_summarized_by_shape_and_columns_and_detailed_by_types_and_first_rows():
    ns = PythonNamespace({"df": FakeTable()})
    assert describe_variables(ns) == ("df: tests.FakeTable = 1,000,000 rows × 2 columns: region, units", False)
    text, failed = describe_variables(ns, "df")
    assert not failed
    assert "column types:\nregion    object\nunits      int64" in text and "first rows:\n  region  units" in text


def test_a_long_error_keeps_its_end_the_exception_itself():
    from rienda_kernel.engine.builtins.notebook import with_error

    try:
        raise ValueError("x" * 10_000 + " the end")
    except ValueError as exc:
        prompt = with_error("Why?", exc)
    assert prompt.startswith("Why?\n\nThe last error in my notebook:\n```\n…")
    assert prompt.endswith(" the end\n```") and len(prompt) < 4200
