"""Compaction in a Rienda notebook, through a real kernel (jupyter_client) and a real
``jupyter nbconvert --execute``: the status line shows how full the window is after each
model turn; a compaction is one line in the cell; a batch run keeps the closing usage and
fill line in the saved notebook; ``%rienda compact`` and ``%rienda pin`` as cells."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import nbformat

from ...helpers.frontend import outputs, texts
from ...helpers.long_session import COMPACTS_AT, lead_and_digger, long_home
from ...helpers.trees import nested


def _plain(messages, kind="display_data"):
    return [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == kind]


def test_the_fill_is_live_and_a_compaction_is_one_line_in_the_cell(frontend_factory, home):
    long_home(*home)
    fe = frontend_factory()
    outputs(fe, "%rienda use long")
    for index in range(1, COMPACTS_AT):
        messages = outputs(fe, f"prompt {index}", allow_stdin=True)
    # the status line, while the run goes on, says the fill once the model turn is saved
    live = [text for text in _plain(messages, "update_display_data") if text.startswith("⏳")]
    assert any(" · context " in text and text.endswith(" % of 600") for text in live), live
    messages = outputs(fe, f"prompt {COMPACTS_AT}", allow_stdin=True)
    shown = _plain(messages)
    [line] = [text for text in shown if "compacted" in text]
    assert line.startswith("🗜 compacted (auto): ") and " tokens of 600; " in line
    assert line.endswith("team: added instructions; team: rewrote the summary")
    after = int(re.search(r"→ ([\d,]+) tokens of 600", line).group(1).replace(",", ""))
    updates = texts(messages)
    assert updates[updates.index(line) + 1].endswith(f" · context {round(100 * after / 600)} % of 600")  # compacted
    answer = [i for i, text in enumerate(shown) if text.startswith("Answer")]  # the message's display, streamed
    assert answer and shown.index(line) < answer[0]  # compacted before the request
    assert not [text for text in texts(messages) if text.startswith("✎ hook team")]  # named in the line, not again
    assert "[hook:team.beforeCompact] compacting (auto): " in "".join(
        m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    ended = _plain(messages, "update_display_data")[-1]
    assert re.match(r"session \S+ · tokens: ", ended) and " % of 600" in ended


def test_a_batch_run_keeps_the_usage_and_fill_line_last_in_the_cell(frontend_factory, home):
    long_home(*home)
    fe = frontend_factory()
    outputs(fe, "%rienda use long")
    messages = outputs(fe, "prompt 1", allow_stdin=False)
    assert not [m for m in messages if m["msg_type"] == "update_display_data"]
    shown = _plain(messages)
    assert shown[0].startswith("Answer 0:") and re.match(r"session \S+ · tokens: ", shown[-1])
    assert shown[-1].endswith(" % of 600") and " · context " in shown[-1]
    assert " s · " not in shown[-1]  # no time: a saved notebook changes only with what the run did


def test_compact_and_pin_cells(frontend_factory, home):
    long_home(*home)
    fe = frontend_factory()
    outputs(fe, "%rienda use long")
    for index in range(1, COMPACTS_AT):
        outputs(fe, f"prompt {index}")
    [pinned] = _plain(outputs(fe, "%rienda pin 2"), "execute_result")
    assert pinned.startswith("Pinned prompt 2 of session ")
    reply, messages = fe.run("%rienda compact")
    assert (reply["status"], reply["evalue"]) == ("error", "compaction cancelled by hook team (say what to keep)")
    [made] = _plain(outputs(fe, "%rienda compact keep the totals"), "execute_result")
    assert made.splitlines()[-1].startswith("compacted (manual): ")


def test_nbconvert_execute_saves_the_fill_and_the_compaction(kernelspec_path, home, tmp_path):
    """A real ``jupyter nbconvert --to notebook --execute``: the saved notebook holds each
    cell's closing usage and fill line, and the compaction's line."""
    agent_home, work = home
    long_home(agent_home, work)
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "rienda", "display_name": "Rienda",
                                                                 "language": "markdown"}})
    notebook.cells = [nbformat.v4.new_code_cell("%rienda use long")] + [
        nbformat.v4.new_code_cell(f"prompt {index}") for index in range(1, COMPACTS_AT + 1)]
    nbformat.write(notebook, work / "long.ipynb")
    env = {**os.environ, "RIENDA_HOME": str(agent_home), "JUPYTER_PATH": kernelspec_path,
           "IPYTHONDIR": str(tmp_path / "ipython")}
    done = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           "--output", "executed.ipynb", "long.ipynb"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cells = json.loads((work / "executed.ipynb").read_text())["cells"][1:]
    plain = [["".join(output.get("data", {}).get("text/plain", "")) for output in cell["outputs"]] for cell in cells]
    for shown in plain:
        assert re.match(r"session \S+ · tokens: ", shown[-1]) and " · context " in shown[-1]
        assert shown[-1].endswith(" % of 600")
    assert [text for text in plain[-1] if text.startswith("🗜 compacted (auto): ")]
    assert not [text for shown in plain[:-1] for text in shown if "compacted" in text]


def test_a_sub_agents_compaction_is_a_line_in_its_box(frontend_factory, home):
    agent_home, work = home
    lead_and_digger(agent_home, work)
    fe = frontend_factory()
    outputs(fe, "%rienda use lead")
    outputs(fe, "%rienda confirm allow")
    messages = outputs(fe, "Go.", allow_stdin=False)
    [box] = nested(messages)  # a batch run: the box once, final
    lines = box["text/plain"].splitlines()
    made = [line for line in lines if "compacted" in line]
    assert made and all(line.startswith("  🗜 compacted (auto): ") and " tokens of 600; " in line for line in made)
    assert "🗜 compacted (auto): " in box["text/html"]
    assert not [text for text in _plain(messages) if text.startswith("🗜")]  # in the box, not a line of the lead's
