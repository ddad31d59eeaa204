"""Running programs as a user whom file permissions bind, with this very interpreter.

As root (CI always is) a program runs through ``setpriv`` (or ``runuser``) as uid/gid
65534 with no supplementary groups; as any other user, as that user. Permission tests need
that user to run the interpreter the suite runs on, which it often cannot: pyenv installs
under root's home, mode 700, so uid 65534 cannot even reach the stdlib. :func:`interpreter`
then builds, once per machine, a copy of the interpreter (its binary, its shared library,
its stdlib without the test suite) in a mode-755 folder of the temporary directory, which
loads this environment's site-packages; the program still really runs as uid 65534. When
neither works (a checkout or a venv the user cannot read), the reason is returned for the
test to skip with.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pwd
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NOBODY", "Unprivileged", "drop_privileges", "interpreter"]

NOBODY = 65534  # the conventional unprivileged uid and gid

# What a permission test's program needs: the same Python, and Rienda with its V8 bridge.
_PROBE = ("import json, sys; import rienda_kernel.engine, py_mini_racer, yaml; "
          "print(json.dumps([sys.version, sys.executable]))")
_LEFT_OUT = ("test", "site-packages", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")


def drop_privileges() -> list[str] | None:
    """The command prefix that runs a program unprivileged; [] when we already are; None
    when we are root with no way to drop privileges."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    if shutil.which("runuser"):
        return ["runuser", "-u", pwd.getpwuid(NOBODY).pw_name, "--"]
    return None


@dataclass(frozen=True)
class Interpreter:
    """A Python the unprivileged user can run: the command and what its environment adds."""

    python: str
    env: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=None)
def interpreter(prefix: tuple[str, ...]) -> Interpreter | str:
    """This interpreter, if the unprivileged user (running through ``prefix``) can run it as
    it is; else a copy it can run; else why not (a sentence for ``pytest.skip``). Found
    once per process."""
    ours = sys.version
    seen = _probe(prefix, Interpreter(sys.executable))
    if seen == ours:
        return Interpreter(sys.executable)
    try:
        copy = _copy_of_this_interpreter()
    except OSError as exc:
        return f"uid {NOBODY} cannot run {sys.executable} ({seen}), and copying it failed: {exc}"
    again = _probe(prefix, copy)
    if again == ours:
        return copy
    return (f"uid {NOBODY} cannot run {sys.executable} ({seen}) nor a copy of it ({again}): "
            "is the checkout or the venv in a folder that user cannot read?")


def _probe(prefix: tuple[str, ...], python: Interpreter) -> str:
    """The ``sys.version`` the unprivileged user's run of ``python`` reports, or what failed."""
    env = {**os.environ, **python.env, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run([*prefix, python.python, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                              env=env, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    version, _ = json.loads(done.stdout.splitlines()[-1])
    return version if version == sys.version else f"it runs Python {version.split()[0]}, not this one"


def _copy_of_this_interpreter() -> Interpreter:
    """A copy of this interpreter in a folder anyone can read (made once: later calls, and
    other test processes, find it), loading this environment's site-packages."""
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    key = hashlib.sha256(f"{binary}|{binary.stat().st_mtime_ns}|{sys.version}|{site.getsitepackages()}".encode())
    final = Path(tempfile.gettempdir()) / f"rienda-tests-python-{key.hexdigest()[:16]}"
    lib = final / "lib"
    made = Interpreter(str(final / "bin" / binary.name),
                       {"LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(lib), os.environ.get("LD_LIBRARY_PATH")]))})
    if final.is_dir():
        return made
    building = Path(tempfile.mkdtemp(prefix=final.name + ".building-", dir=final.parent))
    try:
        (building / "bin").mkdir()
        (building / "lib").mkdir()
        shutil.copy2(binary, building / "bin" / binary.name)
        if sysconfig.get_config_var("Py_ENABLE_SHARED"):  # the binary needs libpython, found by LD_LIBRARY_PATH
            for library in Path(sysconfig.get_config_var("LIBDIR")).glob("libpython*"):
                if library.is_file():
                    shutil.copy2(library, building / "lib" / library.name)
        copied = building / "lib" / stdlib.name
        shutil.copytree(stdlib, copied, ignore=lambda folder, names: [n for n in names if n in _LEFT_OUT]
                        if Path(folder) == stdlib else [], symlinks=True)
        (copied / "site-packages").mkdir()
        (copied / "site-packages" / "rienda-tests.pth").write_text("".join(
            f"import site; site.addsitedir({folder!r})\n" for folder in site.getsitepackages()))
        for folder, _, _ in os.walk(building):
            os.chmod(folder, 0o755)
        try:
            os.rename(building, final)
        except OSError:  # another test process made it first
            shutil.rmtree(building, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return made


class Unprivileged:
    """Runs Python snippets and commands as the unprivileged user, with an interpreter it
    can run. :attr:`directory` is a fresh directory that user owns. A snippet prints one
    JSON value as its last line of output, which :meth:`run` returns; a snippet that fails
    fails the test with its stderr. :meth:`command` runs ``python ARGS`` and returns the
    completed process, whatever its exit status."""

    def __init__(self, directory: Path, prefix: list[str], python: Interpreter) -> None:
        self.directory = directory
        self.python = python
        self._prefix = prefix

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, **self.python.env, "HOME": str(self.directory), "PYTHONDONTWRITEBYTECODE": "1",
                **extra}

    def run(self, code: str) -> Any:
        done = self.command("-c", textwrap.dedent(code))
        assert done.returncode == 0, f"the unprivileged snippet failed (exit {done.returncode}):\n{done.stderr}"
        return json.loads(done.stdout.splitlines()[-1])

    def command(self, *args: str, cwd: Path | None = None, input: str | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*self._prefix, self.python.python, *args], cwd=cwd or self.directory,
                              env=self.env(**(env or {})), capture_output=True, text=True, timeout=120, input=input)
