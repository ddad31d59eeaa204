"""A person's view of a confirm: JupyterLab in Chromium runs a notebook, the tool asks,
the Allow button is clicked in the page, and the turn goes on to its answer."""

from __future__ import annotations

import json
import re
import textwrap
import time

import pytest
import yaml

from rienda_kernel.install import install

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

NOTEBOOK = "publish.ipynb"


def write_notebook(path, sources) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {}, "outputs": [],
              "source": source} for i, source in enumerate(sources)]
    path.write_text(json.dumps({
        "cells": cells,
        "metadata": {"kernelspec": {"name": "rienda", "display_name": "Rienda", "language": "markdown"},
                     "language_info": {"name": "markdown"}},
        "nbformat": 4, "nbformat_minor": 5}, indent=1))


@pytest.fixture
def workspace(tmp_path):
    """RIENDA_HOME with the publish tool and an agent; a workdir with the script and the notebook;
    the kernelspec in a temporary prefix. Returns (workdir, environment for the server)."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "tools" / "publish").mkdir(parents=True)
    (home / "tools" / "publish" / "index.js").write_text(textwrap.dedent(PUBLISH))
    (home / "agents").mkdir()
    (home / "agents" / "publisher.md").write_text(
        "---\ndescription: Publishes branches.\nmodel: scripted/script.yaml\ntools: [publish]\n---\nBe brief.\n")
    work.mkdir()
    (work / "script.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    write_notebook(work / NOTEBOOK, ["%rienda use publisher", "Publish the branch"])
    prefix = tmp_path / "jupyter-prefix"
    install(prefix=str(prefix))
    return work, {"RIENDA_HOME": str(home), "JUPYTER_PATH": str(prefix / "share" / "jupyter")}


def wait_for_frame(page, frames: list, needle: bytes, timeout: float = 30) -> None:
    """Waits until the page has sent a websocket frame containing ``needle``."""
    deadline = time.monotonic() + timeout
    while not any(needle in (f if isinstance(f, bytes) else f.encode()) for f in frames):
        if time.monotonic() > deadline:
            raise AssertionError(f"the page sent no websocket frame with {needle!r} within {timeout}s")
        page.wait_for_timeout(100)  # lets Playwright deliver its events


def test_allow_is_clicked_in_jupyterlab_and_the_turn_finishes(workspace, lab_server_factory, page, tmp_path):
    from playwright.sync_api import expect

    work, env = workspace
    server = lab_server_factory(work, env)
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(payload)))
    page.goto(server.url(f"/lab/tree/{NOTEBOOK}"), wait_until="domcontentloaded")

    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    cells = notebook.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2, timeout=60_000)
    expect(notebook.locator(".jp-KernelName")).to_have_text("Rienda")
    expect(notebook.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle", timeout=60_000)
    # The kernel shows buttons only once JupyterLab's widget manager has opened this comm
    # (before it, a confirm would become a y/N input box); it goes out on the same shell
    # channel as, and so before, the execute requests.
    wait_for_frame(page, sent, b"jupyter.widget.control")

    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel:visible", has_text=re.compile(r"^Run All Cells$")).click()

    first, second = cells.nth(0), cells.nth(1)
    expect(first.locator(".jp-OutputArea-output")).to_contain_text("publisher")
    output = second.locator(".jp-OutputArea")
    allow = output.locator("button", has_text=re.compile(r"^\s*Allow\s*$"))
    deny = output.locator("button", has_text=re.compile(r"^\s*Deny\s*$"))
    expect(allow).to_be_visible(timeout=60_000)
    expect(output).to_contain_text("Push the current branch?")
    expect(output).to_contain_text("[tool:publish] about to ask")  # ctx.log arrived while the tool waits
    expect(output).not_to_contain_text("All published.")
    expect(output.locator(".jp-Stdin")).to_have_count(0)  # buttons, not a y/N input box
    allow.click()

    expect(output).to_contain_text("All published.", timeout=60_000)
    expect(output).to_contain_text("pushed")
    expect(output).to_contain_text("Allowed")
    expect(allow).to_be_disabled()
    expect(deny).to_be_disabled()
    expect(output.locator("strong", has_text="published")).to_be_visible()  # the answer is rendered Markdown
    expect(second.locator(".jp-InputPrompt")).to_contain_text("[2]")
    expect(notebook.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle")
    expect(output.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    page.wait_for_timeout(300)  # let the last layout settle for the picture
    page.screenshot(path=str(tmp_path / "jupyterlab.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'jupyterlab.png'}")
