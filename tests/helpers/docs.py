"""The documentation's pages as tests see them: their code blocks, links and paths, and
the commands of a ``sh`` block run one by one, as a reader would type them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .paths import DOCS, REPO, README

PAGES = [README, *sorted(DOCS.glob("*.md"))]
_FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.S | re.M)
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: its page (relative to the repository), the heading it is under,
    its place among that heading's blocks, its language tag, its text and first line."""

    page: str
    heading: str
    index: int
    lang: str
    text: str
    line: int

    @property
    def key(self) -> tuple[str, str, int]:
        return self.page, self.heading, self.index


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(text))
    headings = _headings(text)
    found, counts = [], {}
    for match in fences:
        under = [title for start, title in headings if start < match.start()]
        heading = under[-1] if under else ""
        index = counts.get(heading, 0)
        counts[heading] = index + 1
        found.append(Block(str(page.relative_to(REPO)), heading, index, match.group(1), match.group(2),
                           text.count("\n", 0, match.start()) + 1))
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def block(page: str, heading: str, index: int = 0) -> Block:
    """The ``index``-th block under ``heading`` on ``page`` (``README.md``, ``docs/x.md``)."""
    for candidate in blocks(REPO / page):
        if candidate.key == (page, heading, index):
            return candidate
    raise AssertionError(f"{page} has no block {index} under the heading {heading!r}")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _headings(text: str) -> list[tuple[int, str]]:
    """(offset, title) of each heading outside code blocks (a ``# comment`` is none)."""
    inside = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    return [(m.start(), m.group(2).strip()) for m in _HEADING.finditer(text)
            if not any(start <= m.start() < end for start, end in inside)]


def anchors(page: Path) -> set[str]:
    return {slug(title) for _, title in _headings(page.read_text(encoding="utf-8"))}


def links(page: Path) -> list[str]:
    """The relative link targets of ``page`` (outside code blocks)."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in target]


def inline_code(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return re.findall(r"`([^`\n]+)`", text)


def commands(block_: Block) -> list[str]:
    """The commands of a ``sh`` block: each non-empty line."""
    assert block_.lang == "sh", block_
    return [line for line in block_.text.splitlines() if line.strip()]


class Shell:
    """A reader's shell: a checkout of its own (``examples/`` and the README copied),
    ``HOME`` and the data folders inside it, this Python's scripts first on ``PATH``, and
    ``export NAME=VALUE`` lines remembered for the next commands."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.checkout = root / "checkout"
        self.checkout.mkdir(parents=True)
        shutil.copytree(REPO / "examples", self.checkout / "examples",
                        ignore=shutil.ignore_patterns("sessions", "__pycache__"))
        shutil.copy(README, self.checkout / "README.md")
        self.env = {key: value for key, value in os.environ.items() if key != "RIENDA_HOME"}
        self.env.update(HOME=str(root / "user"), XDG_DATA_HOME=str(root / "data"),
                        JUPYTER_DATA_DIR=str(root / "jupyter"), IPYTHONDIR=str(root / "ipython"),
                        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
                        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        (root / "user").mkdir()

    def run(self, command: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        words = shlex.split(command, comments=True)
        if words and words[0] == "export":
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                self.env[name] = value
            return subprocess.CompletedProcess(command, 0, "", "")
        return subprocess.run(["bash", "-c", command], cwd=cwd or self.checkout, env=self.env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
