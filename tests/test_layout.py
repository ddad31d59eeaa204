"""The tree shows the architecture, and holds it: one engine API that every front end
uses, Jupyter only in its wing, small files (httpx's exported-members convention, plus
checks on imports parsed from the source)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import rienda_kernel.engine as engine

from tests.helpers.paths import REPO

PACKAGE = REPO / "rienda_kernel"
ENGINE = PACKAGE / "engine"
JUPYTER_PACKAGES = {"IPython", "ipykernel", "ipywidgets", "jupyter_client", "comm", "zmq", "traitlets"}
# The front ends: everything of the package outside the engine, and the magics' entry.
FRONT_ENDS = sorted({*PACKAGE.rglob("*.py"), *(REPO / "magics").rglob("*.py")} - set(ENGINE.rglob("*.py")))


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (relative imports resolved), with its line."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]  # `from pkg import module`
    return found


def is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (REPO / relative).with_suffix(".py").is_file() or (REPO / relative / "__init__.py").is_file()


def test_all_exports_exist_and_are_sorted():
    assert engine.__all__ == sorted(engine.__all__)
    missing = [name for name in engine.__all__ if not hasattr(engine, name)]
    assert missing == []


def test_the_lazy_loader_knows_every_exported_name_and_nothing_else():
    assert set(engine._WHERE) == set(engine.__all__)  # noqa: SLF001 - the loader's own table
    for name, module in engine._WHERE.items():  # noqa: SLF001
        assert is_module(f"rienda_kernel.engine.{module}"), (name, module)
    try:
        engine.HookChain  # noqa: B018 - a loop internal, not part of the API
    except AttributeError:
        pass
    else:
        raise AssertionError("rienda_kernel.engine exports a name __all__ does not list")


def test_front_ends_import_the_engine_only_through_its_api():
    offending = [f"{path.relative_to(REPO)}:{line}: {module}"
                 for path in FRONT_ENDS for line, module in imported_modules(path)
                 if module.startswith("rienda_kernel.engine.") and is_module(module)]
    assert offending == [], "front ends import engine submodules:\n" + "\n".join(offending)


def test_only_the_jupyter_wing_imports_jupyter():
    allowed = (PACKAGE / "jupyter", REPO / "magics")
    offending = [f"{path.relative_to(REPO)}:{line}: {module}"
                 for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(allowed[0])
                 for line, module in imported_modules(path) if module.split(".")[0] in JUPYTER_PACKAGES]
    assert offending == [], "Jupyter imported outside rienda_kernel/jupyter:\n" + "\n".join(offending)


def test_the_engine_never_imports_jupyter_at_run_time():
    code = ("import sys, rienda_kernel.engine, rienda_kernel.cli; from rienda_kernel.engine import *; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(JUPYTER_PACKAGES)!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == "[]\n"


def test_no_source_file_is_over_400_lines_and_the_engine_top_level_is_small():
    long = [f"{path.relative_to(REPO)}: {n} lines" for path in sorted(PACKAGE.rglob("*"))
            if path.suffix in (".py", ".js") and (n := len(path.read_text(encoding="utf-8").splitlines())) > 400]
    assert long == []
    entries = sorted(p.name for p in ENGINE.iterdir() if p.name != "__pycache__")
    assert len(entries) < 20, entries


def test_the_wheel_ships_one_top_level_package():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'packages = ["rienda_kernel"]' in text
    assert (REPO / "magics" / "__init__.py").read_text(encoding="utf-8").count("\n") < 15  # a thin entry


def test_every_module_imports():
    """A name a front end takes from the engine's API must exist there (the linters cannot
    see through the lazy loader): each module imported in a fresh process."""
    modules = sorted(".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                     for path in PACKAGE.rglob("*.py") if path.name != "__main__.py")
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_no_test_module_imports_another_test_module():
    """Shared helpers live in tests/helpers, shared fixtures in a conftest.py."""
    offending = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        for line, module in imported_modules(path):
            if module.split(".")[-1].startswith("test_") and is_module(module):
                offending.append(f"{path.relative_to(REPO)}:{line}: {module}")
    assert offending == []
