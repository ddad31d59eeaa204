"""YAML a person wrote, read strictly and within bounds: ``config.yaml``, an agent's front
matter, an expectations file, a scripted model.

Contracts of :func:`load`:
- Safe YAML only (no Python objects), at most :data:`MAX_YAML_BYTES` of text.
- No key twice in any mapping, at any depth: YAML would keep the last one without a word,
  and a setting silently dropped is a setting the user believes in. (Merge keys, ``<<:
  *base``, are how YAML repeats on purpose; they still merge.)
- Nesting at most :data:`MAX_DEPTH` levels, and at most :data:`MAX_VALUES` values once
  aliases are expanded: a few lines of anchors can stand for billions of values (an alias
  bomb), which everything that walks the settings (the secret redaction, ``ctx.config``)
  would expand. A value that contains itself is refused too.
- Strings are valid Unicode: a ``"\\ud83d"`` escape (YAML allows it) becomes U+FFFD.
- Every problem is a :class:`YAMLProblem` with the 1-based line of the file it is at (None
  when unknown) and what is wrong; callers name their file and raise their own error.
"""

from __future__ import annotations

import yaml

from ..common.bounded import MAX_DEPTH
from ..common.json_value import JSON
from ..common.text import repair

__all__ = ["MAX_YAML_BYTES", "MAX_DEPTH", "MAX_VALUES", "YAMLProblem", "load"]

MAX_YAML_BYTES = 4 * 1024 * 1024
MAX_VALUES = 100_000
_MERGE = "tag:yaml.org,2002:merge"


class YAMLProblem(ValueError):
    """What is wrong with a YAML text, and the 1-based line of the file where (or None)."""

    def __init__(self, line: int | None, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


def load(text: str, *, first_line: int = 1) -> tuple[JSON, yaml.Node | None, dict[str, int]]:
    """The document's value, its node and the file line of each top-level key as written
    (``{}`` unless the document is a mapping); ``(None, None, {})`` for an empty document.
    ``first_line`` is the file's line where ``text`` starts (2 for front matter)."""
    offset = first_line - 1
    if len(text) > MAX_YAML_BYTES:
        raise YAMLProblem(None, f"larger than {MAX_YAML_BYTES // (1024 * 1024)} MiB")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None, {}
        _check(node, offset)  # before constructing, which merges '<<' keys into their mapping
        keys = {key.value: _line(key, offset) for key, _ in node.value if isinstance(key, yaml.ScalarNode)
                and key.tag != _MERGE} if isinstance(node, yaml.MappingNode) else {}
        return repair(loader.construct_document(node)), node, keys
    except yaml.YAMLError as exc:
        raise _malformed(exc, offset) from exc
    except RecursionError:  # the composer recurses: thousands of levels, which a chained cause would keep alive
        raise YAMLProblem(None, f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()


def _malformed(exc: yaml.YAMLError, offset: int) -> YAMLProblem:
    """PyYAML's error as one problem at one line: where what was left open (a bracket, a
    quote) began, when the parser gave up on a later line, else where it gave up."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return YAMLProblem(None, f"malformed YAML: {exc}")
    problem = str(exc.problem or exc)
    if "'\\t'" in problem:  # PyYAML says "found character '\t' that cannot start any token"
        problem += " (YAML indents with spaces: replace the tab with spaces)"
    opened, gave_up = exc.context_mark, exc.problem_mark
    if opened is not None and gave_up is not None and opened.line != gave_up.line:
        what = str(exc.context or "").removeprefix("while parsing ").removeprefix("while scanning ")
        return YAMLProblem(opened.line + 1 + offset, f"malformed YAML: {what} that starts here is not closed "
                           f"({problem} at line {gave_up.line + 1 + offset})")
    mark = gave_up or opened
    return YAMLProblem(mark.line + 1 + offset if mark else None, f"malformed YAML: {problem}")


def _check(root: yaml.Node, offset: int) -> None:
    """Duplicate keys, depth, expanded size and cycles, on an explicit stack (no recursion)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        children = _children(node)
        if expanded:
            size[key] = 1 + sum(size[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if size[key] > MAX_VALUES:
                raise YAMLProblem(_line(node, offset), f"expands to more than {MAX_VALUES} values (aliases "
                                  "repeating aliases?); write the values out, or fewer of them")
            if depth[key] > MAX_DEPTH:
                raise YAMLProblem(_line(node, offset), f"nested more than {MAX_DEPTH} levels deep")
            continue
        if key in size:
            continue  # met again through an alias: measured already
        if key in depth:
            raise YAMLProblem(_line(node, offset), "a value that contains itself (an alias to one of its parents)")
        depth[key] = 0  # on the current path until measured
        if isinstance(node, yaml.MappingNode):
            _unique_keys(node, offset)
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _unique_keys(node: yaml.MappingNode, offset: int) -> None:
    seen: dict[tuple[str, str], yaml.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
            continue
        name = (key_node.tag, key_node.value)
        if name in seen:
            raise YAMLProblem(_line(key_node, offset), f"key {key_node.value!r} appears twice (first at line "
                              f"{_line(seen[name], offset)}); YAML would keep only the last: say it once")
        seen[name] = key_node


def _line(node: yaml.Node, offset: int) -> int:
    return node.start_mark.line + 1 + offset
