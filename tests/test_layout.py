"""The tree shows the architecture, and holds it: one engine API that every front end
uses, Jupyter only in its wing, no import circle, seams typed in code (not in comments),
one definition per public name, small files and folders (httpx's exported-members
convention, plus checks on imports and definitions parsed from the source)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
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


def test_the_checker_sees_the_same_names_the_lazy_loader_loads():
    """engine/__init__.py's ``if TYPE_CHECKING:`` block re-exports (``X as X``) each name of
    the lazy table from the same submodule, and nothing else."""
    tree = ast.parse((ENGINE / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    seen = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1, ast.dump(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
            seen[alias.name] = node.module
    assert seen == engine._WHERE  # noqa: SLF001 - the loader's own table


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


def test_no_source_file_is_over_400_lines_and_no_folder_holds_20_entries():
    """The cap is on a folder's own entries, not on the depth: a folder that grows gets
    sub-packages."""
    long = [f"{path.relative_to(REPO)}: {n} lines" for path in sorted(PACKAGE.rglob("*"))
            if path.suffix in (".py", ".js") and (n := len(path.read_text(encoding="utf-8").splitlines())) > 400]
    assert long == []
    crowded = {str(folder.relative_to(REPO)): len(entries) for folder in [PACKAGE, *PACKAGE.rglob("*")]
               if folder.is_dir() and folder.name != "__pycache__"
               and len(entries := [p for p in folder.iterdir() if p.name != "__pycache__"]) >= 20}
    assert crowded == {}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def import_graph() -> dict[str, set[str]]:
    """Each rienda_kernel module and the project modules it imports: every import counted
    (top level, in a function, under ``TYPE_CHECKING``), ``from pkg import module`` as an
    import of that module. A module's own packages are not counted: Python runs them
    before the module in any case."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        targets = {resolve(module) for _, module in imported_modules(path)}
        own_packages = {name.rsplit(".", depth)[0] for depth in range(1, name.count(".") + 1)}
        graph[name] = {target for target in targets if target and target != name and target not in own_packages}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_among_the_modules():
    found = circles(import_graph())
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(circle) for circle in found)


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


# ``name: Any  # package.Type``: a seam whose type lives only in a comment (the comment
# names a type: a capitalised word, possibly dotted, first).
COMMENT_TYPED = re.compile(r"\bAny\b[^#\n]*#\s*(?:[a-z_]+\.)*_?[A-Z][A-Za-z]*(?:[,:|)\s]|$)")


def test_no_seam_is_typed_in_a_comment():
    offending = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
                 for path in sorted(PACKAGE.rglob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if COMMENT_TYPED.search(line)]
    assert offending == [], "use a Protocol or the real type:\n" + "\n".join(offending)


def test_the_comment_typed_seam_pattern():
    assert COMMENT_TYPED.search("    agent: Any  # agents.Agent")
    assert COMMENT_TYPED.search("    subagents: Any = None  # builtins.subagent.Subagents")
    assert COMMENT_TYPED.search("    self.items: list[Any] = []  # _Note, _Call, RunBox")
    assert not COMMENT_TYPED.search("    options: Mapping[str, Any] = field(default_factory=dict)  # for the provider")


# Names a convention outside the module asks every such module to define.
CONVENTIONAL_NAMES = {
    "main": "an entry point (python -m, a console script, the worker process)",
    "load_ipython_extension": "what IPython's %load_ext calls, in each package that can be loaded",
    "request_body": "each provider module's request for its vendor",
    "TYPE_CHECKING": "False at run time where importing typing costs the lean gate client (mypy reads the name)",
}


def test_each_public_name_is_defined_once():
    defined = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list):
                names = []  # a typing.overload is a signature of the one definition after it
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [target.id for target in node.targets if isinstance(target, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            for name in names:
                if not name.startswith("_") and name not in CONVENTIONAL_NAMES:
                    defined[name].append(module_name(path))
    twice = {name: modules for name, modules in defined.items() if len(modules) > 1}
    assert twice == {}


# The attributes of objects Rienda does not own that the engine reads where they may be
# missing: ``getattr(x, name, None)`` is for those, never to choose a behaviour of ours.
FOREIGN_ATTRIBUTES = {
    "_data": "os.environ's mapping",
    "problem_mark": "a PyYAML error", "context_mark": "a PyYAML error", "problem": "a PyYAML error",
    "strerror": "an OSError's cause",
    "__module__": "a user's object in the notebook namespace",
    "content": "the MCP SDK's result", "structured_content": "the MCP SDK's result", "type": "the MCP SDK's content",
    "mime_type": "the MCP SDK's content", "text": "the MCP SDK's resource", "data": "the MCP SDK's content",
    "blob": "the MCP SDK's resource", "is_error": "the MCP SDK's result", "meta": "the MCP SDK's result",
}


def test_the_engine_chooses_no_behaviour_by_getattr():
    offending = []
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) == 3 and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value not in FOREIGN_ATTRIBUTES):
                offending.append(f"{path.relative_to(REPO)}:{node.lineno}: getattr(..., {node.args[1].value!r}, ...)")
    assert offending == [], "type the seam instead:\n" + "\n".join(offending)


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


def test_the_engine_hides_a_cause_only_where_it_says_why():
    """errors.py's rule: foreign errors chained ``from exc``; ``from None`` with a comment
    on its line, the line before, or its ``except`` clause."""
    unexplained = []
    for path in sorted(ENGINE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = ast.parse(text)
        handler_of = {id(inner): handler for handler in ast.walk(tree) if isinstance(handler, ast.ExceptHandler)
                      for inner in ast.walk(handler)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.cause, ast.Constant) and node.cause.value is None:
                around = lines[node.lineno - 2:node.end_lineno]  # the line before, and the statement
                if id(node) in handler_of:
                    around.append(lines[handler_of[id(node)].lineno - 1])  # the except clause
                if not any("#" in line for line in around):
                    unexplained.append(f"{path.relative_to(REPO)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == [], "chain the cause (from exc) or say why it is hidden:\n" + "\n".join(unexplained)
