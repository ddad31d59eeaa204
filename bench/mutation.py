"""Mutation testing of the hook chain, tool invocation and the agent loop: a report, not a CI step.

    nice -n 19 .venv/bin/python bench/mutation.py                 # the three files, about an hour
    .venv/bin/python bench/mutation.py --files rienda_kernel/engine/tools/invoke.py --time-limit 900
    .venv/bin/python bench/mutation.py --mutants NAME...          # re-check some (last run's survivors)

mutmut (``pip install mutmut==3.8.1``; not a project dependency) changes one thing at a
time in ``rienda_kernel/engine/{hooks,tools,loop}.py`` (a flipped condition, a changed
constant, a dropped argument...) and runs the engine tests that cover the changed
function. A mutant the tests do not notice "survives": either a test is missing or the
change makes no difference. The run happens in a throwaway copy of the working tree
(mutmut writes a ``mutants/`` folder and adds its settings to ``pyproject.toml``), at the
lowest CPU priority, one test process at a time, and is stopped after ``--time-limit``
seconds (what finished by then is reported).

Prints the score (killed / (killed + survived); timeouts count as killed) and the diff of
every surviving mutant. Exits 0 whatever the score (it informs, it does not gate); 1 if mutmut could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = ["rienda_kernel/engine/hooks.py", "rienda_kernel/engine/tools/invoke.py", "rienda_kernel/engine/runtime/loop.py"]
# The engine tests that exercise those three files (mutmut runs, per mutant, only those of
# them that call the mutated function).
TESTS = [
    "tests/engine/test_hooks.py", "tests/engine/test_tools.py", "tests/engine/test_loop.py",
    "tests/engine/test_partial_answers.py", "tests/engine/ctx/test_read_only.py",
    "tests/engine/test_spec_examples.py", "tests/engine/test_config.py", "tests/engine/test_extensions.py",
]
IGNORED = shutil.ignore_patterns(".git", ".venv", "mutants", "__pycache__", "*.egg-info", "notebooks", "bench")


def settings(files: list[str], tests: list[str]) -> str:
    """The ``[tool.mutmut]`` table for the copy's pyproject.toml."""
    quoted = lambda items: "[" + ", ".join(json.dumps(item) for item in items) + "]"  # noqa: E731
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["rienda_kernel"]\n'
        f"only_mutate = {quoted(files)}\n"
        f"pytest_add_cli_args_test_selection = {quoted(tests)}\n"
        'also_copy = ["examples"]\n'  # the documentation's examples, which tests read
        # No nbval, no cache, quiet: each mutant's run is a plain pytest of engine tests.
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "-x"]\n'
        # V8 (mini-racer) is not fork-safe: fork workers from a server that never ran a test.
        'process_isolation = "forkserver"\n'
        "timeout_multiplier = 10.0\n"
        "timeout_constant = 10.0\n"
    )


def prepare(workdir: Path, files: list[str], tests: list[str]) -> None:
    shutil.copytree(REPO, workdir, ignore=IGNORED, dirs_exist_ok=True)
    with (workdir / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(settings(files, tests))


def mutmut(workdir: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run the mutmut next to this interpreter in ``workdir``; on timeout, stop its whole
    process group and return what it printed."""
    command = [str(Path(sys.executable).with_name("mutmut")), *args]
    process = subprocess.Popen(command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            out, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, _ = process.communicate()
        out += "\n[mutation.py: stopped at the time limit]\n"
    return subprocess.CompletedProcess(command, process.returncode, out, "")


def results(workdir: Path, only: list[str]) -> dict[str, list[str]]:
    """Mutant names (of ``only``, if given) grouped by status (killed, survived, timeout...)."""
    listed = mutmut(workdir, "results", "--all", "true").stdout
    grouped: dict[str, list[str]] = {}
    for line in listed.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith("rienda_kernel.") and (not only or name in only):
            grouped.setdefault(status.strip(), []).append(name)
    return grouped


def report(workdir: Path, grouped: dict[str, list[str]], seconds: float) -> str:
    counts = {status: len(names) for status, names in sorted(grouped.items())}
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    survived = counts.get("survived", 0)
    score = 100.0 * killed / (killed + survived) if killed + survived else 0.0
    lines = [f"mutation score: {score:.1f}% ({killed} killed, {survived} survived) in {seconds / 60:.0f} min",
             "by status: " + ", ".join(f"{status} {n}" for status, n in counts.items())]
    for name in grouped.get("survived", []):
        lines += ["", f"== survived: {name}", mutmut(workdir, "show", name).stdout.rstrip()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", default=FILES, help="files to mutate (repository paths)")
    parser.add_argument("--tests", nargs="+", default=TESTS, help="test files mutmut may run")
    parser.add_argument("--mutants", nargs="+", default=[], metavar="NAME",
                        help="check only these mutants (names as the report prints them), e.g. last run's survivors")
    parser.add_argument("--time-limit", type=float, default=3600, help="stop mutmut after this many seconds")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway copy (its path is printed)")
    args = parser.parse_args()
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        print("mutation.py: mutmut is not installed next to this Python; pip install mutmut==3.8.1", file=sys.stderr)
        return 2
    os.nice(19 - os.nice(0))  # the lowest priority, whatever the caller asked for
    workdir = Path(tempfile.mkdtemp(prefix="rienda-mutation-"))
    try:
        prepare(workdir, args.files, args.tests)
        started = time.monotonic()
        run = mutmut(workdir, "run", "--max-children", "1", *args.mutants, timeout=args.time_limit)
        print(run.stdout[-3000:], file=sys.stderr)
        grouped = results(workdir, args.mutants)
        if not set(grouped) - {"not checked"}:
            print("mutation.py: mutmut checked no mutant (its output is above)", file=sys.stderr)
            return 1
        text = report(workdir, grouped, time.monotonic() - started)
    finally:
        if args.keep:
            print(f"mutation.py: the copy is kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.write(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
