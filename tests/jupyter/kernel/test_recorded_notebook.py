"""A Rienda-kernel notebook recorded, then re-run from its recording: real
``jupyter nbconvert --execute`` runs against an OpenAI-wire server on 127.0.0.1 that counts
requests; the replay with the server stopped, no key and ``RIENDA_RECORD_MODE=replay``."""

from __future__ import annotations

import shutil

from ...helpers.recorded_notebooks import KEY, execute, make_folder, outputs, raw_outputs, write_notebook
from ...helpers.recording_server import echo_server
from ...helpers.vendor_wire import serving

CELLS = ["%rienda record talk.rec.jsonl", "%rienda use a", "python: total = 6 * 7", "Hello from the middle",
         "python: print(total + 1)"]


def recorded(tmp_path, server, cells=CELLS, hooks=()):
    folder = make_folder(tmp_path / "nb", server.url, hooks)
    write_notebook(folder / "talk.ipynb", cells, "rienda")
    done = execute(folder / "talk.ipynb", "live.ipynb")
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_a_replay_offline_asks_nothing_and_shows_what_the_recorded_run_showed(kernelspec_path, tmp_path):
    with serving(echo_server()) as server:
        folder = recorded(tmp_path, server)
        asked = len(server.requests)
    assert asked == 5  # two python calls (a call and its answer each), one plain prompt
    recording = (folder / "talk.rec.jsonl").read_bytes()
    assert KEY.encode() not in recording and b"Authorization" not in recording
    done = execute(folder / "talk.ipynb", "replayed.ipynb", key=False, mode="replay")
    assert done.returncode == 0, done.stderr[-3000:]
    live, replayed = outputs(folder / "live.ipynb"), outputs(folder / "replayed.ipynb")
    assert replayed == live
    assert "The tool said: 43" in "".join(replayed[4])  # the variable the first python call made was there again
    status = [text for text in "\n".join(map("\n".join, (map(str, c) for c in raw_outputs(folder / "replayed.ipynb"))
                                                      )).splitlines() if "tokens:" in text]
    assert status and all("(replayed: 0 spent now)" in line for line in status)
    assert (folder / "talk.rec.jsonl").read_bytes() == recording


def test_an_edited_middle_cell_asks_from_there_in_auto_and_is_one_line_in_replay(kernelspec_path, tmp_path):
    with serving(echo_server()) as server:
        folder = recorded(tmp_path, server)
        edited = [*CELLS[:3], "Hello from the edited middle", CELLS[4]]
        write_notebook(folder / "talk.ipynb", edited, "rienda")
        done = execute(folder / "talk.ipynb", "auto.ipynb")
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 5 + 3  # the edited cell's request, then the last cell's two
    cells = outputs(folder / "auto.ipynb")
    assert not any("left the recording" in text for cell in cells[:3] for text in cell)
    [line] = [text for text in cells[3] if "left the recording" in text]
    assert line == ("↯ cell [4] left the recording talk.rec.jsonl: message 5 (user) differs: recorded 'Hello from "
                    "the middle', now 'Hello from the edited middle'; the model was asked, and the rest of this turn "
                    "is live")
    shutil.copy(folder / "talk.rec.jsonl", folder / "after-auto.jsonl")
    write_notebook(folder / "talk.ipynb", [*CELLS[:3], "Hello, edited again", CELLS[4]], "rienda")
    done = execute(folder / "talk.ipynb", "replay.ipynb", key=False, mode="replay", allow_errors=True)
    cells = outputs(folder / "replay.ipynb")
    assert cells[3][-1] == ("RiendaError: the turn failed: cell [4] is not in the recording talk.rec.jsonl: message 5 "
                            "(user) differs: recorded 'Hello from the edited middle', now 'Hello, edited again'; "
                            "replay mode never asks the model")
    assert (folder / "talk.rec.jsonl").read_bytes() == (folder / "after-auto.jsonl").read_bytes()


def test_a_hook_added_afterwards_is_reported_as_a_divergence(kernelspec_path, tmp_path):
    with serving(echo_server()) as server:
        folder = recorded(tmp_path, server)
        hook = folder / "home" / "hooks" / "team-rules" / "index.js"
        hook.parent.mkdir(parents=True)
        hook.write_text("module.exports = { beforeModelRequest(ctx, r) { return {system: r.system + ' Be kind.'}; } };")
        make_folder(folder.parent / "nb", server.url, hooks=("team-rules",))
        done = execute(folder / "talk.ipynb", "hooked.ipynb", key=False, mode="replay", allow_errors=True)
    cells = outputs(folder / "hooked.ipynb")
    assert cells[2][-1].startswith("RiendaError: the turn failed: cell [3] is not in the recording talk.rec.jsonl: "
                                   "the system prompt differs: recorded 'Be brief.', now 'Be brief. Be kind.' "
                                   "(hook team-rules rewrote it)")
