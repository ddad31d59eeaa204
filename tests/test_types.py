"""The package type-checks, as httpx and pydantic do in CI: ``mypy --strict`` (pinned in the
test extras, configured in pyproject.toml with nothing relaxed) over ``rienda_kernel`` finds
no error; ``Any`` appears only as the alias for JSON from outside
(``engine/common/json_value.py``); every ``type: ignore`` names its error code and says why."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from tests.helpers.paths import REPO

PACKAGE = REPO / "rienda_kernel"
ALIAS = PACKAGE / "engine" / "common" / "json_value.py"
IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<rest>.*)$")
EXPLAINED = re.compile(r"^\[[a-z-]+(?:,\s*[a-z-]+)*\]\s+#\s*\S")


def test_mypy_strict_finds_no_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout


def any_uses(source: str) -> list[int]:
    """The lines naming ``typing.Any`` (``Any``, ``typing.Any``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "Any":
            found.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "Any" and isinstance(node.value, ast.Name) \
                and node.value.id in ("typing", "t"):
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "typing" and any(a.name == "Any" for a in node.names):
            found.append(node.lineno)
    return found


def test_any_is_only_the_alias_for_json_from_outside():
    offending = [f"{path.relative_to(REPO)}:{line}" for path in sorted(PACKAGE.rglob("*.py")) if path != ALIAS
                 for line in any_uses(path.read_text(encoding="utf-8"))]
    assert offending == [], "Any outside engine/common/json_value.py:\n" + "\n".join(offending)


def test_the_any_finder_finds_each_spelling():
    assert any_uses("from typing import Any\nx: Any = 1\nimport typing\ny: typing.Any = 2\n") == [1, 2, 4]


def test_every_type_ignore_names_its_code_and_its_reason():
    unexplained = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
                   for path in sorted(PACKAGE.rglob("*.py"))
                   for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                   if (match := IGNORE.search(line)) and not EXPLAINED.match(match["rest"])]
    assert unexplained == [], "\n".join(unexplained)


def test_the_ignore_rule_tells_an_explained_ignore_from_a_bare_one():
    assert EXPLAINED.match("[import-untyped]  # ipywidgets ships no types")
    assert not EXPLAINED.match("") and not EXPLAINED.match("[attr-defined]")
