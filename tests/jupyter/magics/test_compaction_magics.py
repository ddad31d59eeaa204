"""Compaction through the %rienda magics in a real python3 ipykernel: a compaction is one
line in the cell, the closing usage and fill line is kept in a batch run, ``%rienda pin``
and ``%rienda compact`` work and return their values; a real
``jupyter nbconvert --execute`` of a python3 notebook that loads the magics keeps those lines
in the saved notebook."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import nbformat

from ...helpers.frontend import outputs, streams, texts, value_of
from ...helpers.homes import scripted_home
from ...helpers.long_session import COMPACTS_AT, lead_and_digger, long_home


def _plain(messages, kind="display_data"):
    return [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == kind]


def _all(messages):
    return streams(messages) + "\n".join(texts(messages))


def test_a_compaction_is_one_line_in_the_cell_and_the_commands_work(python_kernel):
    home, work, start = python_kernel
    long_home(home, work)
    fe = start()
    outputs(fe, "%rienda use long")
    for index in range(1, COMPACTS_AT):
        shown = _plain(outputs(fe, f"r = %rienda ask prompt {index}"))
        assert re.match(r"session \S+ · tokens: ", shown[-1]) and shown[-1].endswith(" % of 600")  # batch: kept, last
    assert value_of(fe, "r.context.window") == 600
    assert "Pinned prompt 2 of session " in _all(outputs(fe, "%rienda pin 2"))
    shown = _plain(outputs(fe, f"r = %rienda ask prompt {COMPACTS_AT}"))
    [line] = [text for text in shown if "compact" in text]
    assert line.startswith("🗜 compacted (auto): ") and line.endswith("team: rewrote the summary")
    assert not [text for text in shown if text.startswith("✎")]
    reply, _ = fe.run("%rienda compact")
    assert (reply["status"], reply["evalue"]) == ("error", "compaction cancelled by hook team (say what to keep)")
    made = _all(outputs(fe, "%rienda compact keep the totals"))
    assert "[hook:team.beforeCompact] compacting (manual): " in made and "compacted (manual): " in made


def test_nbconvert_execute_keeps_the_magics_usage_fill_and_compaction_lines(tmp_path):
    """A real ``jupyter nbconvert --to notebook --execute`` of a python3 notebook that loads
    the magics: each ``%rienda ask`` cell's saved outputs end with the usage and fill line; the
    sixth prompt's compaction is one line; a sub-agent's compaction is in its box; ``%rienda
    pin`` and ``%rienda compact`` cells keep their lines."""
    home, work = scripted_home(tmp_path)
    long_home(home, work)
    lead_and_digger(home, work)
    cells = ["%load_ext rienda_kernel", "%rienda use long",
             *(f"r = %rienda ask prompt {index}" for index in range(1, COMPACTS_AT + 1)),
             "%rienda pin 1", "%rienda compact keep the totals",
             "%rienda use lead", "%rienda confirm allow", "%rienda ask Go."]
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                 "language": "python"}})
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
    nbformat.write(notebook, work / "long.ipynb")
    env = {**os.environ, "RIENDA_HOME": str(home), "IPYTHONDIR": str(tmp_path / "ipython")}
    done = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           "--output", "executed.ipynb", "long.ipynb"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    saved = json.loads((work / "executed.ipynb").read_text())["cells"]
    shown = [[_saved_text(output) for output in cell["outputs"]] for cell in saved]
    asks = shown[2:2 + COMPACTS_AT]
    for lines in asks:
        assert re.fullmatch(r"session \S+ · tokens: [\d,]+ in · [\d,]+ out · context \d+ % of 600", lines[-1]), lines
    assert not [line for lines in asks[:-1] for line in lines if "compacted" in line]
    [made] = [line for line in asks[-1] if line.startswith("🗜 compacted (auto): ")]
    assert " tokens of 600; folded " in made and made.endswith("team: rewrote the summary")
    assert "Pinned prompt 1 of session " in shown[2 + COMPACTS_AT][-1]
    assert "compacted (manual): " in shown[3 + COMPACTS_AT][-1]
    [box] = [output["data"] for output in saved[-1]["outputs"]
             if "↳ sub-agent <b>digger</b>" in "".join(output.get("data", {}).get("text/html", ""))]
    made = [line for line in "".join(box["text/plain"]).splitlines() if "compacted" in line]
    assert made and all(line.startswith("  🗜 compacted (auto): ") for line in made)
    assert "🗜 compacted (auto): " in "".join(box["text/html"])
    assert not [line for line in shown[-1] if line.startswith("🗜")]  # in the box, not a line of the lead's


def _saved_text(output: dict) -> str:
    return "".join(output.get("text") or output.get("data", {}).get("text/plain", ""))
