"""The front matter of an agent file: splitting it from the system prompt, composing its
YAML with each key's line, and :class:`AgentError`, whose message starts ``<path>:<line>:``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from . import yaml_file
from ..common.json_value import JSON
from ..errors import ConfigError

__all__ = ["AgentError", "compose", "item_lines", "kind", "split_front_matter"]


class AgentError(ConfigError):
    """A malformed agent file; ``path`` and ``line`` (1-based) locate the fault."""

    def __init__(self, path: Path | str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = str(path)
        self.line = line


def split_front_matter(path: Path, text: str) -> tuple[str, str]:
    """``(yaml_text, body)``: the lines between the opening and closing ``---`` lines,
    and the system prompt after them (one leading newline and trailing space removed).

    A delimiter line is ``---`` optionally followed by spaces or tabs.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip(" \t\r") != "---":
        raise AgentError(path, 1, "an agent file must start with a line '---' opening the YAML front matter")
    for index in range(1, len(lines)):
        if lines[index].rstrip(" \t\r") == "---":
            body = "\n".join(lines[index + 1 :])
            if body.startswith("\n"):
                body = body[1:]
            return "\n".join(lines[1:index]), body.rstrip()
    raise AgentError(path, 1, "the front matter opened here is never closed by a line '---'")


def compose(path: Path, source: str) -> tuple[dict[JSON, JSON], yaml.MappingNode | None, dict[str, int]]:
    """The front matter as a dict (its keys as YAML made them: not always strings), its node
    (None when empty) and each key's line.

    Lines are the file's own: YAML line + 1 for the opening ``---``.
    """
    try:
        data, node, lines = yaml_file.load(source, first_line=2)  # no key twice, at any depth; bounded
    except yaml_file.YAMLProblem as exc:
        problem = exc.problem.replace("malformed YAML", "malformed YAML front matter", 1)
        raise AgentError(path, exc.line or 1, problem) from exc
    if data is None:
        return {}, None, {}
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise AgentError(path, _line(node) if node is not None else 1,
                         f"the front matter must be a mapping of keys, got {kind(data)}")
    return data, node, lines


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 2


def kind(value: object) -> str:
    """A person's name for a YAML value's type: "a string", "a list"..."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _value_node(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key and isinstance(value_node, yaml.Node):
            return value_node
    return None


def item_lines(node: yaml.Node | None, key: str) -> list[int]:
    """The file line of each item of the sequence under ``key`` (empty if not a sequence)."""
    value = _value_node(node, key) if isinstance(node, yaml.MappingNode) else None
    if not isinstance(value, yaml.SequenceNode):
        return []
    return [_line(item) for item in value.value]
