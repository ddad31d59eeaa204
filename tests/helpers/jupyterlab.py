"""JupyterLab in headless Chromium, as the browser tests drive it: notebooks on disk, the
open notebook panel and what a person does with it (Playwright)."""

from __future__ import annotations

import json
import re
import time

RIENDA_KERNEL = {"name": "rienda", "display_name": "Rienda", "language": "markdown"}
PYTHON_KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def write_notebook(path, sources, kernelspec) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {}, "outputs": [],
              "source": source} for i, source in enumerate(sources)]
    path.write_text(json.dumps({
        "cells": cells, "metadata": {"kernelspec": kernelspec, "language_info": {"name": kernelspec["language"]}},
        "nbformat": 4, "nbformat_minor": 5}, indent=1))


class Notebook:
    """The open notebook panel of a page, and what a person does with it."""

    def __init__(self, page, server, name: str, cells: int) -> None:
        from playwright.sync_api import expect

        self.page = page
        page.goto(server.url(f"/lab/tree/{name}"), wait_until="domcontentloaded")
        self.panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        self.cells = self.panel.locator(".jp-Notebook .jp-Cell")
        expect(self.cells).to_have_count(cells, timeout=60_000)
        self.wait_idle()
        # The page is connected to the kernel only once the status bar says so ("Python 3
        # (ipykernel) | Idle"); before that, Run All finds no kernel and runs nothing.
        expect(page.locator("#jp-main-statusbar")).to_contain_text(re.compile(r"\| Idle"), timeout=60_000)

    def wait_idle(self) -> None:
        from playwright.sync_api import expect

        expect(self.panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle",
                                                                                         timeout=60_000)

    def menu(self, top: str, item: str, timeout: float = 60) -> None:
        """Choose ``top`` › ``item``. JupyterLab enables a notebook's commands only once the
        notebook is the current widget with its kernel connected, and a menu shows its items'
        state as it was when it opened; so a disabled item is closed and the menu opened again
        (as a person would), until it is enabled."""
        deadline = time.monotonic() + timeout
        label = self.page.locator(".lm-Menu-itemLabel:visible", has_text=re.compile(rf"^{re.escape(item)}$"))
        entry = self.page.locator("li.lm-Menu-item:visible", has=label)
        while True:
            self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{top}$")).click()
            if "lm-mod-disabled" not in (entry.get_attribute("class") or ""):
                label.click()
                return
            self.page.keyboard.press("Escape")
            assert time.monotonic() < deadline, f"{top} › {item} stayed disabled for {timeout} s"
            self.page.wait_for_timeout(200)  # lets the page go on meanwhile

    def run_all(self) -> None:
        self.menu("Run", "Run All Cells")

    def restart_and_run_all(self) -> None:
        self.menu("Kernel", "Restart Kernel and Run All Cells…")
        self.page.locator(".jp-Dialog .jp-mod-accept").click()

    def output(self, index: int):
        return self.cells.nth(index).locator(".jp-OutputArea")


def wait_until(page, predicate, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        page.wait_for_timeout(100)  # lets Playwright deliver its events


def report(label: str, timings: dict[str, float]) -> None:
    print(f"{label}: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in timings.items()))
