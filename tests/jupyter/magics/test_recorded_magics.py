"""The magics in a python3 kernel, recorded and re-run from the recording: real
``jupyter nbconvert --execute`` runs and a real ``pytest --nbval`` run against an
OpenAI-wire server on 127.0.0.1 that counts requests (stopped for the replays)."""

from __future__ import annotations

import os
import subprocess
import sys

from ...helpers.paths import NOTEBOOKS
from ...helpers.recorded_notebooks import KEY, execute, make_folder, outputs, write_notebook
from ...helpers.recording_server import echo_server
from ...helpers.vendor_wire import serving

CELLS = ["%load_ext rienda_kernel", "%rienda record talk.rec.jsonl", "%rienda use a",
         "r = %rienda ask python: total = 6 * 7\nr.text", "total"]


def nbval(folder, notebook):
    """``pytest --nbval`` of ``notebook`` offline: no key, ``RIENDA_RECORD_MODE=replay``."""
    env = {name: value for name, value in os.environ.items() if name != "LOCAL_API_KEY"}
    env.update(RIENDA_RECORD_MODE="replay", RIENDA_HOME=str(folder / "home"), IPYTHONDIR=str(folder / ".ipython"))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval", notebook,
                           "--nbval-sanitize-with", str(NOTEBOOKS / "sanitize.cfg"), "-q", "-o", "addopts="],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_the_magics_replay_offline_and_the_agents_variable_is_back(tmp_path):
    with serving(echo_server()) as server:
        folder = make_folder(tmp_path / "nb", server.url)
        write_notebook(folder / "talk.ipynb", CELLS, "python3")
        done = execute(folder / "talk.ipynb", "live.ipynb")
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 2
    assert KEY not in (folder / "talk.rec.jsonl").read_text()
    done = execute(folder / "talk.ipynb", "replayed.ipynb", key=False, mode="replay")
    assert done.returncode == 0, done.stderr[-3000:]
    live, replayed = outputs(folder / "live.ipynb"), outputs(folder / "replayed.ipynb")
    assert replayed == live and replayed[4] == ["42"]  # the agent's python call made `total` again
    checked = nbval(folder, "live.ipynb")  # the saved live run, checked offline against its outputs
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "5 passed" in checked.stdout


def test_nbval_fails_a_divergence_with_its_line(tmp_path):
    with serving(echo_server()) as server:
        folder = make_folder(tmp_path / "nb", server.url)
        write_notebook(folder / "talk.ipynb", CELLS, "python3")
        assert execute(folder / "talk.ipynb", "live.ipynb").returncode == 0
    text = (folder / "live.ipynb").read_text().replace("total = 6 * 7", "total = 6 * 8")
    (folder / "edited.ipynb").write_text(text)
    checked = nbval(folder, "edited.ipynb")
    assert checked.returncode == 1
    assert ("the cell “python: total = 6 * 8” is not in the recording talk.rec.jsonl: message 1 (user) differs: "
            "recorded 'python: total = "
            "6 * 7', now 'python: total = 6 * 8'; replay mode never asks the model") in checked.stdout, checked.stdout[-4000:]
