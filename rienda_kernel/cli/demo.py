"""``rienda demo``: the documentation's example, offline, in a home of its own.

The demo copies the examples shipped with Rienda (``examples/`` in the repository: the
``counter`` agent, the ``word-count`` tool, the ``guard`` hook, a scripted model) into
:func:`demo_root` (``$XDG_DATA_HOME/rienda/demo``, by default
``~/.local/share/rienda/demo``), registers the Rienda Jupyter kernel in the active
environment, and runs one agent turn there. It never writes into the directory it is run
from, nor into the user's own ``RIENDA_HOME``; each run refreshes the extensions and the
workspace files and keeps the sessions saved before.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import IO

from ..engine import Rienda, RiendaError, run_interruptibly
from ..frontend.output import OutputStream
from ..frontend.terminal import TerminalUI

__all__ = ["DEMO_AGENT", "DEMO_PROMPT", "demo_root", "examples_dir", "keep_whole", "prepare", "run_demo"]

DEMO_AGENT = "counter"
DEMO_PROMPT = "How many words are in notes.txt?"
_HOME_PARTS = ("agents", "tools", "hooks")


def demo_root(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """Where the demo lives: ``$XDG_DATA_HOME/rienda/demo`` (``~/.local/share`` by default)."""
    environ = os.environ if environ is None else environ
    data = environ.get("XDG_DATA_HOME") or str(Path("~/.local/share").expanduser())
    return Path(data) / "rienda" / "demo"


def examples_dir() -> Path:
    """The examples: inside the installed package (a wheel), or beside it in a checkout
    (an editable install); RiendaError when neither has them."""
    package = Path(__file__).resolve().parents[1]  # rienda_kernel/
    for candidate in (package / "examples", package.parent / "examples"):
        if (candidate / "home" / "agents" / f"{DEMO_AGENT}.md").is_file():
            return candidate
    raise RiendaError(f"the examples are missing from this installation (looked in {package / 'examples'}); "
                      "reinstall Rienda")


def prepare(root: Path) -> tuple[Path, Path]:
    """Copy the examples into ``root``: ``root/home`` (agents, tools, hooks; sessions
    kept) and ``root/work`` (the workspace files). Returns ``(home, workdir)``."""
    source = examples_dir()
    home, work = root / "home", root / "work"
    for part in _HOME_PARTS:
        shutil.rmtree(home / part, ignore_errors=True)
        if (source / "home" / part).is_dir():
            shutil.copytree(source / "home" / part, home / part)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work, ignore=shutil.ignore_patterns("home", "__pycache__"))
    return home, work


def register_kernel() -> str:
    """Install the Rienda kernelspec into this environment (``--sys-prefix``); one line
    saying where, or why it could not."""
    from ..jupyter.install import install

    try:
        path = install(prefix=sys.prefix)
    except (OSError, ValueError) as exc:
        return f"could not register the Rienda Jupyter kernel ({exc}); try: python -m rienda_kernel install --user"
    return (f"registered the Rienda Jupyter kernel in {path}: run `jupyter lab` and pick \"Rienda\" in the "
            "launcher (pip install jupyterlab if you have none)")


def keep_whole(folder: Path) -> None:
    """Paths inside ``folder`` shown whole on stdout and stderr (``~/`` at most), never
    relative to the current folder: a hint naming them is right from any folder."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, OutputStream):
            stream.reader.keep_whole(folder)


def run_demo(kernel: bool = True, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """Prepare the demo, register the kernel (unless ``kernel`` is False), run one turn;
    the exit status (0 when the turn ended with ``end_turn``)."""
    out, err = out or sys.stdout, err or sys.stderr
    root = demo_root()
    keep_whole(root)  # the hint below runs from any folder
    home, work = prepare(root)
    err.write(f"Rienda demo: agent {DEMO_AGENT} in {home}, workspace {work}, scripted model (offline)\n")
    err.write(f"> {DEMO_PROMPT}\n")
    err.flush()
    rienda = Rienda(home=home, workdir=work)
    conversation = rienda.conversation(DEMO_AGENT)
    ui = TerminalUI("ask", None, out=out, err=err)
    result, interrupted = run_interruptibly(lambda cancel: conversation.run(DEMO_PROMPT, ui, cancel))
    conversation.close()
    if result.session_id:
        err.write(f"session {result.session_id} saved; see it with: rienda --home {home} show last\n")
    if kernel:
        err.write(register_kernel() + "\n")
    err.flush()
    if interrupted:
        return 130
    return 0 if result.reason == "end_turn" else 1
