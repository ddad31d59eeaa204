"""The repository's folders, for tests that read its examples and documents."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "home"
README = REPO / "README.md"
NOTEBOOKS = REPO / "notebooks"
DOCS = REPO / "docs"
