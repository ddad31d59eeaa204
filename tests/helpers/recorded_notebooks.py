"""Notebooks run by a real ``jupyter nbconvert --execute`` against the echo server
(:mod:`.recording_server`), for the recording tests of the Rienda kernel and the magics."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import yaml

from .homes import write_agent
from .paths import NOTEBOOKS

KEY = "sk-notebook-recording-0123456789abcdef"


def make_folder(root: Path, url: str, hooks: tuple[str, ...] = ()) -> Path:
    """A notebook's folder with its Rienda home (``home/``): agent ``a`` on the echo server
    through an endpoint needing ``LOCAL_API_KEY``, with the notebook tools."""
    home = root / "home"
    (home / "agents").mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"providers": {"local": {"api": "openai", "base_url": url, "api_key_env": "LOCAL_API_KEY"}}}))
    write_agent(home, "a", ["python", "variables"], hooks, "local/echo")
    return root


def write_notebook(path: Path, cells: list[str], kernel: str) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, path)


def execute(path: Path, out: str, *, key: bool = True, mode: str | None = None,
            allow_errors: bool = False) -> subprocess.CompletedProcess:
    """``jupyter nbconvert --to notebook --execute`` of ``path`` into ``out`` beside it, its
    Rienda home the folder's ``home/``; ``key``: LOCAL_API_KEY set; ``mode``: RIENDA_RECORD_MODE."""
    env = {name: value for name, value in os.environ.items() if name not in ("LOCAL_API_KEY", "RIENDA_RECORD_MODE")}
    env["RIENDA_HOME"] = str(path.parent / "home")
    env["IPYTHONDIR"] = str(path.parent / ".ipython")
    if key:
        env["LOCAL_API_KEY"] = KEY
    if mode:
        env["RIENDA_RECORD_MODE"] = mode
    command = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", str(path),
               "--output", out, "--ExecutePreprocessor.timeout=120"]
    if allow_errors:
        command.append("--allow-errors")
    return subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=300)


def outputs(path: Path) -> list[list[str]]:
    """Each code cell's outputs as text (text/plain, streams, errors), sanitized by
    notebooks/sanitize.cfg as nbval would."""
    rules = re.findall(r"^regex: (.*)$\n^replace: (.*)$", (NOTEBOOKS / "sanitize.cfg").read_text(),
                       flags=re.MULTILINE)  # as nbval reads the file
    cells = []
    for cell in nbformat.read(path, as_version=4).cells:
        texts = []
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain") or \
                   (f"{output.get('ename')}: {output.get('evalue')}" if output.get("output_type") == "error" else "")
            for regex, replace in rules:
                text = re.sub(regex, replace, text)
            texts.append(text)
        cells.append(texts)
    return cells


def raw_outputs(path: Path) -> list[Any]:
    return [cell.get("outputs", []) for cell in nbformat.read(path, as_version=4).cells]
