"""tests/helpers/scheduling.py names files and tests by path: each name is a real one, and
every test module with a module- or class-scoped fixture is one whose tests one worker runs."""

from __future__ import annotations

import ast
import re

from tests.helpers.paths import REPO
from tests.helpers.scheduling import ALONE, FIRST, TOGETHER, rank, scope


def _shared_fixture_modules() -> set[str]:
    """Test modules with a fixture wider than one test (session-scoped ones excepted: a
    worker is one session) or a unittest class set up once."""
    found = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"""scope=["'](module|class|package)["']|def setUpClass\(""", text):
            found.add(str(path.relative_to(REPO)))
    return found


def test_the_files_one_worker_runs_whole_are_those_sharing_a_fixture():
    assert sorted(TOGETHER) == sorted(_shared_fixture_modules())


def test_every_test_to_run_alone_exists():
    for nodeid in ALONE:
        path, name = nodeid.split("::")
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        assert name in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, nodeid


def test_every_path_that_starts_first_exists():
    assert all((REPO / prefix).exists() for prefix in FIRST)


def test_a_notebooks_cells_and_a_shared_fixtures_tests_are_one_unit_and_others_one_each():
    assert scope("notebooks/tools.ipynb::Cell 3") == scope("notebooks/tools.ipynb::Cell 4") == "notebooks/tools.ipynb"
    together = TOGETHER[0]
    assert scope(f"{together}::test_a") == scope(f"{together}::test_b[x]") == together
    assert scope("tests/engine/test_loop.py::test_a") == "tests/engine/test_loop.py::test_a"
    assert rank(TOGETHER[0]) < rank("notebooks/tools.ipynb") < rank("tests/engine/test_loop.py::test_a")
