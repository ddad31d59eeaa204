"""Recorded sessions as pytest tests: ``pytest --rienda-replay DIR``.

Shipped with Rienda and registered through the ``pytest11`` entry point; it does nothing
unless ``--rienda-replay`` is given (like nbval's ``--nbval``). Each ``*.jsonl`` session
under DIR becomes one test item, which replays the session through a hook chain (the hooks
its agent declares now in the Rienda home, or ``--rienda-hooks a,b``), reusing the recorded
tool results unless ``--rienda-run-tools``. The item fails, with the replay's per-call
report as its failure text, when a call is now refused, no longer refused, gets other
arguments or another result, could not run again (``--rienda-run-tools``: its tool gone,
skipped, or its MCP server down), or an assistant text changed; ``<id>.expect.yaml`` beside a
session states what must happen instead (``<id>.expect.yaml``, see ``docs/testing.md``).

Without other paths on the command line only the sessions run; with paths, the sessions
run alongside them. Items share nothing but one engine per process, so ``pytest -n auto``
(pytest-xdist) spreads them over processes. The engine is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from rienda_kernel.engine import ReplayReport, Rienda

__all__ = ["ReplayDiffers", "SessionFile", "SessionItem"]

_ROOTS = pytest.StashKey[list[Path]]()
_ENGINE = pytest.StashKey["Rienda"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rienda", "Rienda: recorded sessions replayed through hooks")
    group.addoption("--rienda-replay", action="append", default=[], metavar="DIR",
                    help="collect each *.jsonl session under DIR as a test replaying it through hooks (repeatable)")
    group.addoption("--rienda-hooks", metavar="A,B",
                    help="replay through these hooks, in order, instead of each session's agent's ('' for none)")
    group.addoption("--rienda-run-tools", action="store_true",
                    help="run the tools again instead of reusing the recorded results")
    group.addoption("--rienda-home", metavar="DIR",
                    help="the Rienda home holding the agents and hooks (default: $RIENDA_HOME, else ~/.rienda)")
    group.addoption("--rienda-workdir", metavar="DIR",
                    help="ctx.workdir for hooks and tools (default: the directory pytest runs in)")
    group.addoption("--rienda-confirm", choices=("allow", "deny"), default="deny",
                    help="how ctx.confirm is answered (default: deny; an expectations file's confirm wins)")


def pytest_configure(config: pytest.Config) -> None:
    """Check the folders and make them what pytest collects (with any paths given)."""
    folders = config.getoption("rienda_replay")
    if not folders:
        return
    roots = []
    for folder in folders:
        root = (config.invocation_params.dir / folder).resolve()
        if not root.is_dir():
            raise pytest.UsageError(f"--rienda-replay {folder}: {root} is not a directory of recorded sessions")
        roots.append(root)
    config.stash[_ROOTS] = roots
    given = config.args if config.args_source == pytest.Config.ArgsSource.ARGS else []
    config.args = given + [str(root) for root in roots if str(root) not in given]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    roots = parent.config.stash.get(_ROOTS, None)
    if roots and file_path.suffix == ".jsonl" and any(file_path.is_relative_to(root) for root in roots):
        return SessionFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                               call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Every report of a replayed session passes the front ends' reader: whatever put it
    together (the replay's report, a hook's error, pytest's own traceback, what was
    captured), no secret reaches the terminal or a JUnit file."""
    report = yield
    if isinstance(item, SessionItem):
        from rienda_kernel.frontend.output import Reader

        reader = Reader(paths=False)  # pytest writes its paths its own way
        if report.longrepr is not None:
            report.longrepr = reader.text(str(report.longrepr))
        report.sections = [(title, reader.text(text)) for title, text in report.sections]
        report.user_properties = [(name, reader.value(value)) for name, value in report.user_properties]
    return report


class ReplayDiffers(Exception):
    """A session that no longer replays as recorded (or as expected); holds the report."""

    def __init__(self, report: ReplayReport) -> None:
        super().__init__("\n".join(report.lines()))
        self.report = report


class SessionFile(pytest.File):
    """One recorded session file: one item."""

    def collect(self) -> list[pytest.Item]:
        return [SessionItem.from_parent(self, name="replay")]


class SessionItem(pytest.Item):
    """Replays its session; fails with the per-call report when something differs."""

    def runtest(self) -> None:
        from rienda_kernel.engine import NonInteractiveUI

        option = self.config.option
        hooks = None if option.rienda_hooks is None else [n.strip() for n in option.rienda_hooks.split(",") if n.strip()]
        ui = NonInteractiveUI(option.rienda_confirm == "allow", record_events=False)
        report = _engine(self.config).replay_file(self.path, hooks=hooks, run_tools=option.rienda_run_tools, ui=ui)
        self.user_properties.append(("hook_calls", report.hook_calls))
        if report.changed:
            raise ReplayDiffers(report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        from rienda_kernel.engine import RiendaError

        if isinstance(excinfo.value, ReplayDiffers):
            return str(excinfo.value)
        if isinstance(excinfo.value, RiendaError):  # a bad session, agent, hook or expectations file
            return f"{self.path}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"replay of {self.path.name}"


def _engine(config: pytest.Config) -> Rienda:
    """One :class:`Rienda` per process (one V8 sandbox, one extension cache)."""
    if _ENGINE not in config.stash:
        from rienda_kernel.engine import Rienda

        option = config.option
        workdir = config.invocation_params.dir / (option.rienda_workdir or ".")
        config.stash[_ENGINE] = Rienda(home=option.rienda_home, workdir=workdir)
    return config.stash[_ENGINE]
