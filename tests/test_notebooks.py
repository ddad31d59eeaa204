"""The documentation notebooks carry their evidence: nbval compares only code cells that
were executed, so every code cell of every notebook in notebooks/ must have been run, top
to bottom in one kernel, with its outputs stored (``python notebooks/execute.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_documentation_notebooks():
    assert {path.name for path in NOTEBOOKS} >= {"quickstart.ipynb", "tools.ipynb", "hooks.ipynb", "magics.ipynb",
                                                 "replay.ipynb", "gate.ipynb", "long-sessions.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_every_code_cell_was_executed_in_order_with_its_outputs_stored(path):
    cells = [cell for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    unexecuted = [i for i, cell in enumerate(cells) if cell.get("execution_count") is None]
    assert not unexecuted, (f"{path.name}: code cells {unexecuted} have no execution_count (nbval skips them); "
                            f"run python notebooks/execute.py {path.name}")
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1)), (
        f"{path.name}: the cells were not run top to bottom in one kernel; run python notebooks/execute.py {path.name}")
    assert any(cell["outputs"] for cell in cells), f"{path.name}: no stored outputs"
    widgets = [i for i, cell in enumerate(cells) for output in cell["outputs"]
               if "application/vnd.jupyter.widget-view+json" in output.get("data", {})]
    assert not widgets, f"{path.name}: cells {widgets} store widget views, which a reopened notebook cannot show"


def test_the_stored_notebooks_show_no_path_of_the_machine_that_ran_them():
    """Paths are shown relative to the notebook's folder: a reader sees ``quickstart/home``."""
    import json

    from tests.helpers.paths import NOTEBOOKS, REPO

    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        outputs = json.dumps([cell.get("outputs", []) for cell in json.loads(path.read_text())["cells"]])
        assert str(REPO) not in outputs and "/notebooks/" not in outputs, path.name
        assert "/tmp/" not in outputs and "ipykernel_" not in outputs, path.name  # temporary homes, cell files
