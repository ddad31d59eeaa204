"""A recorded Rienda kernel as JupyterLab drives it (jupyter_client, ``allow_stdin``, the live
status line): a kernel records; a new kernel, with the server stopped, no key and
``RIENDA_RECORD_MODE=replay``, answers every cell from the recording, rebuilds the variable
the agent's ``python`` call made, and says ``replayed`` on its status line."""

from __future__ import annotations

import re

from ...helpers.frontend import JupyterLab, outputs
from ...helpers.recorded_notebooks import KEY, make_folder
from ...helpers.recording_server import echo_server
from ...helpers.vendor_wire import serving

CELLS = ["%rienda record talk.rec.jsonl", "%rienda use a", "python: total = 6 * 7", "python: print(total + 1)"]


def plain(messages, kind):
    return [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == kind]


def run_cells(folder, env):
    frontend = JupyterLab(folder / "home", folder, {"IPYTHONDIR": str(folder / ".ipython"), **env})
    try:
        return [outputs(frontend, cell, allow_stdin=True) for cell in CELLS]
    finally:
        frontend.close()


def test_a_new_kernel_answers_from_the_recording_live_in_the_cell(kernelspec_path, tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_API_KEY", raising=False)
    monkeypatch.delenv("RIENDA_RECORD_MODE", raising=False)
    with serving(echo_server()) as server:
        folder = make_folder(tmp_path / "nb", server.url)
        live = run_cells(folder, {"LOCAL_API_KEY": KEY})
        assert len(server.requests) == 4
    replayed = run_cells(folder, {"RIENDA_RECORD_MODE": "replay"})
    last_status = plain(replayed[3], "update_display_data")[-1]
    assert re.match(r"session \S+ · tokens: ", last_status) and " over 2 model turns (replayed: 0 spent now) · " in last_status
    assert "(replayed" not in plain(live[3], "update_display_data")[-1]
    answer = [text for text in plain(replayed[3], "update_display_data") if "The tool said" in text]
    assert answer and answer[-1].startswith("The tool said: 43")  # `total`, made by the replayed turn's python call
