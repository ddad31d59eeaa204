"""A person's view of a confirm in JupyterLab, in Chromium: the tool asks, Allow is clicked
in the page, the turn goes on to its answer, and the saved notebook keeps a record of it.

In a Rienda notebook, and in a Python 3 notebook with ``%load_ext rienda_kernel`` (where
the page's widget manager connected before the extension was loaded), on the first run
and after a kernel restart with Run All, with no reload in between. Timings (run to
buttons, click to cell done) are printed, never asserted.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from rienda_kernel.jupyter.install import install

from ...helpers.extensions import CAREFUL
from ...helpers.homes import write_agent, write_extension, write_script
from ...helpers.jupyterlab import PYTHON_KERNEL, RIENDA_KERNEL, Notebook, report, wait_until, write_notebook
from ...helpers.paths import REPO

pytestmark = pytest.mark.browser

PUBLISH = """
module.exports = {
  description: "Publishes the current branch.",
  parameters: { type: "object", properties: {} },
  execute: function (ctx) {
    ctx.log("about to ask");
    return ctx.confirm({ title: "Publish", body: "Push the current branch?" }) ? "pushed" : { text: "cancelled", isError: true };
  },
};
"""

SCRIPT = [
    {"text": "I will publish the branch.", "tool_calls": [{"name": "publish", "arguments": {}}]},
    {"text": "All **published**."},
]

RIENDA_NOTEBOOK = "publish.ipynb"
PYTHON_NOTEBOOK = "publish-python.ipynb"
@pytest.fixture
def workspace(tmp_path):
    """RIENDA_HOME with the publish tool and an agent; a workdir with the script and the two
    notebooks; the kernelspec in a temporary prefix. Returns (workdir, server environment)."""
    home, work = tmp_path / "home", tmp_path / "work"
    write_extension(home, "tools", "publish", PUBLISH)
    write_agent(home, "publisher", tools=["publish"], description="Publishes branches.")
    work.mkdir()
    write_script(work, SCRIPT)
    write_notebook(work / RIENDA_NOTEBOOK, ["%rienda use publisher", "Publish the branch"], RIENDA_KERNEL)
    write_notebook(work / PYTHON_NOTEBOOK, ["%load_ext rienda_kernel\n%rienda use publisher",
                                            "r = %rienda ask Publish the branch", "r.tool_calls[0].text"],
                   PYTHON_KERNEL)
    prefix = tmp_path / "jupyter-prefix"
    install(prefix=str(prefix))
    # PYTHONPATH: the kernels run this checkout's Rienda, whichever one the environment installed
    return work, {"RIENDA_HOME": str(home), "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
                  "IPYTHONDIR": str(tmp_path / "ipython"), "PYTHONPATH": str(REPO)}


def allow_when_asked(notebook: Notebook, cell: int, started: float) -> dict[str, float]:
    """Waits for the buttons in ``cell``, checks what is around them, clicks Allow, waits for
    the cell to be done; returns the timings a person would feel."""
    from playwright.sync_api import expect

    output = notebook.output(cell)
    allow = output.locator("button", has_text=re.compile(r"^\s*Allow\s*$"))
    expect(allow).to_be_visible(timeout=60_000)
    shown = time.monotonic()
    expect(output).to_contain_text("Push the current branch?")
    expect(output).to_contain_text("[tool:publish] about to ask")  # ctx.log arrived while the tool waits
    expect(output.locator(".jp-Stdin")).to_have_count(0)  # buttons, not a y/N input box
    clicked = time.monotonic()
    allow.click()
    expect(output).to_contain_text("Publish: allowed (answered with the buttons", timeout=60_000)
    expect(notebook.cells.nth(cell).locator(".jp-InputPrompt")).not_to_contain_text("*", timeout=60_000)
    done = time.monotonic()
    expect(output.locator("button")).to_have_count(0)  # the record replaced the buttons
    return {"run → buttons": shown - started, "click → cell done": done - clicked}


def test_allow_is_clicked_in_a_rienda_notebook_and_the_turn_finishes(workspace, lab_server_factory, page, tmp_path):
    from playwright.sync_api import expect

    work, env = workspace
    server = lab_server_factory(work, env)
    notebook = Notebook(page, server, RIENDA_NOTEBOOK, 2)
    expect(notebook.panel.locator(".jp-KernelName")).to_have_text("Rienda")
    started = time.monotonic()
    notebook.run_all()
    expect(notebook.output(0)).to_contain_text("publisher", timeout=60_000)
    timings = allow_when_asked(notebook, 1, started)
    output = notebook.output(1)
    expect(output).to_contain_text("All published.", timeout=60_000)
    expect(output).to_contain_text("pushed")
    expect(output.locator("strong", has_text="published")).to_be_visible()  # the answer is rendered Markdown
    expect(notebook.cells.nth(1).locator(".jp-InputPrompt")).to_contain_text("[2]")
    notebook.wait_idle()
    expect(output.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    report("Rienda kernel", timings)
    page.screenshot(path=str(tmp_path / "jupyterlab.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'jupyterlab.png'}")


def test_a_python_notebook_gets_buttons_after_load_ext_and_after_a_restart_and_keeps_the_record(
        workspace, lab_server_factory, page, tmp_path):
    from playwright.sync_api import expect

    work, env = workspace
    server = lab_server_factory(work, env)
    notebook = Notebook(page, server, PYTHON_NOTEBOOK, 3)
    started = time.monotonic()
    notebook.run_all()
    expect(notebook.output(0)).to_contain_text("Rienda: home", timeout=60_000)  # %load_ext says one line
    first = allow_when_asked(notebook, 1, started)
    expect(notebook.output(2)).to_contain_text("'pushed'", timeout=60_000)
    notebook.wait_idle()
    report("Python 3 notebook, first run", first)

    started = time.monotonic()
    notebook.restart_and_run_all()  # the widget manager reconnects; the extension is loaded again
    expect(notebook.output(2)).not_to_contain_text("'pushed'", timeout=60_000)  # the outputs were cleared
    again = allow_when_asked(notebook, 1, started)
    expect(notebook.output(2)).to_contain_text("'pushed'", timeout=60_000)
    notebook.wait_idle()
    report("Python 3 notebook, after Restart Kernel and Run All", again)

    notebook.menu("File", "Save Notebook")
    wait_until(page, lambda: "Publish: allowed" in (work / PYTHON_NOTEBOOK).read_text(), "the notebook was saved")
    outputs = json.loads((work / PYTHON_NOTEBOOK).read_text())["cells"][1]["outputs"]
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    record = [o["data"] for o in outputs if "Publish: allowed" in "".join(o.get("data", {}).get("text/plain", ""))]
    assert len(record) == 1 and "Push the current branch?" in "".join(record[0]["text/html"])

    reopened = page.context.new_page()  # a reader opening the saved notebook
    notebook = Notebook(reopened, server, PYTHON_NOTEBOOK, 3)
    output = notebook.output(1)
    expect(output).to_contain_text("Publish: allowed (answered with the buttons")
    expect(output).to_contain_text("Push the current branch?")
    expect(output).not_to_contain_text("Error displaying widget")
    expect(output).not_to_contain_text("model not found")
    reopened.screenshot(path=str(tmp_path / "reopened.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'reopened.png'}")


def test_the_agent_in_a_python_notebook_asks_with_buttons_before_its_code_writes_and_the_code_runs_there(
        lab_server_factory, page, tmp_path):
    """The python tool in JupyterLab: the careful hook's confirm is buttons in the cell, and
    after Allow the code runs in the notebook's own namespace, printing into the cell."""
    from playwright.sync_api import expect

    home, work = tmp_path / "nb-home", tmp_path / "nb-work"
    write_extension(home, "hooks", "careful", CAREFUL)
    write_agent(home, "analyst", tools=["python"], hooks=["careful"], description="Explores.", body="Explore.")
    work.mkdir()
    code = "total = sum(sales)\nopen('total.txt', 'w').write(str(total))\nprint('saved', total)"
    write_script(work, [
        {"text": "I will save the total.", "tool_calls": [{"name": "python", "arguments": {"code": code}}]},
        {"text": "Saved **12**."}])
    write_notebook(work / "agent.ipynb", ["%load_ext rienda_kernel\n%rienda use analyst\nsales = [3, 4, 5]",
                                          "r = %rienda ask Save the total.", "total, open('total.txt').read()"],
                   PYTHON_KERNEL)
    prefix = tmp_path / "nb-prefix"
    install(prefix=str(prefix))
    server = lab_server_factory(work, {"RIENDA_HOME": str(home), "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
                                       "IPYTHONDIR": str(tmp_path / "nb-ipython"), "PYTHONPATH": str(REPO)})
    notebook = Notebook(page, server, "agent.ipynb", 3)
    notebook.run_all()
    output = notebook.output(1)
    allow = output.locator("button", has_text=re.compile(r"^\s*Allow\s*$"))
    expect(allow).to_be_visible(timeout=60_000)
    expect(output).to_contain_text("Run this code?")
    expect(output.locator(".jp-Stdin")).to_have_count(0)
    assert not (work / "total.txt").exists()  # nothing ran before the answer
    allow.click()
    expect(output).to_contain_text("saved 12", timeout=60_000)  # the code's own print, in the cell
    expect(output.locator("strong", has_text="12")).to_be_visible(timeout=60_000)
    expect(notebook.output(2)).to_contain_text("(12, '12')", timeout=60_000)  # its variable is the notebook's
    notebook.wait_idle()
