"""A sub-agent in JupyterLab, in Chromium: the lead's guard asks about the child's
``rm -rf``, the buttons appear in the running cell titled with the sub-agent's name, Deny
is clicked in the page, nothing is deleted, and the child's run stays nested under its
``agent`` call, folded, its answer visible."""

from __future__ import annotations

import re
import time

import pytest

from rienda_kernel.jupyter.install import install

from ...helpers.paths import REPO
from ...helpers.trees import delegate, shell, write_agent, write_hook, write_script
from ...helpers.trees import ASKING_GUARD
from ...helpers.jupyterlab import RIENDA_KERNEL, Notebook, report, write_notebook

pytestmark = pytest.mark.browser


def test_deny_is_clicked_for_a_childs_rm_rf_and_its_run_is_folded_under_the_call(lab_server_factory, page,
                                                                                tmp_path):
    from playwright.sync_api import expect

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    write_hook(home, "guard", ASKING_GUARD)
    write_agent(home, "lead", tools=("agent",), hooks=("guard",))
    write_agent(home, "cleaner", tools=("shell",))
    write_script(work, "lead", [delegate("cleaner", "Clean up."), {"text": "The lead heard back."}])
    write_script(work, "cleaner", [shell("rm -rf victim", text="Cleaning now."), {"text": "Cleaner: finished."}])
    (work / "victim").mkdir()
    (work / "victim" / "keep.txt").write_text("precious")
    write_notebook(work / "tree.ipynb", ["%rienda use lead", "Clean the workspace."], RIENDA_KERNEL)
    prefix = tmp_path / "jupyter-prefix"
    install(prefix=str(prefix))
    # PYTHONPATH: the kernel runs this checkout's Rienda, whichever one the environment installed
    server = lab_server_factory(work, {"RIENDA_HOME": str(home), "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
                                       "IPYTHONDIR": str(tmp_path / "ipython"), "PYTHONPATH": str(REPO)})
    notebook = Notebook(page, server, "tree.ipynb", 2)
    started = time.monotonic()
    notebook.run_all()
    output = notebook.output(1)
    deny = output.locator("button", has_text=re.compile(r"^\s*Deny\s*$"))
    expect(deny).to_be_visible(timeout=60_000)
    shown = time.monotonic()
    expect(output).to_contain_text("Dangerous command (sub-agent cleaner)")
    expect(output).to_contain_text("sub-agent cleaner")
    expect(output).to_contain_text("Cleaning now.")  # the child's run, live, under the agent call
    expect(output).to_contain_text("running…")
    clicked = time.monotonic()
    deny.click()
    expect(output).to_contain_text("Dangerous command (sub-agent cleaner): denied (answered with the buttons",
                                   timeout=60_000)
    expect(output).to_contain_text("The lead heard back.", timeout=60_000)
    expect(notebook.cells.nth(1).locator(".jp-InputPrompt")).not_to_contain_text("*", timeout=60_000)
    done = time.monotonic()
    summary = output.locator("details > summary", has_text="sub-agent cleaner")
    expect(summary).to_be_visible()
    expect(output.locator("details").first).not_to_have_attribute("open", "")  # folded...
    expect(output.get_by_text("answer: Cleaner: finished.")).to_be_visible()  # ...its answer visible
    assert (work / "victim" / "keep.txt").read_text() == "precious"
    report("sub-agent confirm", {"run → buttons": shown - started, "click → cell done": done - clicked})
    page.screenshot(path=str(tmp_path / "subagent.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'subagent.png'}")
