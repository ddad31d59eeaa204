"""The scripted model: responses read from a YAML file, for offline runs and tests.

``scripted/<path>`` names a YAML file (relative to the workdir, or absolute) holding a
list; each item is one model response::

    - text: "Let me count."
      thinking: "optional"
      tool_calls:
        - name: word-count
          arguments: {path: notes.txt}
    - text: "There are 42 words."

Optional item keys: ``id`` on a tool call; ``usage: {input_tokens, output_tokens}``;
``chunk_delay_ms`` (a pause between streamed chunks, to watch streaming or interrupt it);
``error`` (the provider fails with that message instead of answering).

Responses are used in order: the response for a turn is the one after those the
conversation already holds (its assistant messages, those a compaction folded into its
summary included), so a resumed session continues where it stopped. A compaction's
summariser request (``purpose`` ``compaction``) takes no response of the script: it is
answered with a summary made of the prompts it was given (:func:`scripted_summary`).
With ``context_window`` in the agent's options, a response without ``usage`` reports
Rienda's estimate of the request and the answer, as a server counts them. The file is read at every turn, so editing it between turns takes effect. When
the script is exhausted the turn fails with a :class:`ProviderError` saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..home import yaml_file
from ..errors import ConfigError, ProviderError
from ..sessions.fill import context_fill, estimate_message
from ..sessions.messages import Message, ToolCall, Usage
from .base import (
    Chunk,
    ModelRequest,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    UsageChunk,
)
from .options import REQUEST_OPTIONS, check_options

__all__ = ["ScriptedProvider", "load_script"]

_ITEM_KEYS = {"text", "thinking", "tool_calls", "usage", "chunk_delay_ms", "error"}
_PIECES = re.compile(r"\S+\s*|\s+")


def load_script(path: Path) -> list[JSONObject]:
    """The script's responses; ConfigError naming the file (and line) if malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: script file not found (the scripted model reads its responses from it)") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        data, node, _ = yaml_file.load(text)  # no key twice; bounded
    except yaml_file.YAMLProblem as exc:
        raise ConfigError(f"{path}:{exc.line or '?'}: {exc.problem}") from exc
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"{path}: a script is a list of responses (- text: ...), got {type(data).__name__}")
    for index, item in enumerate(data):
        line = node.value[index].start_mark.line + 1
        _check_item(item, f"{path}:{line}: response {index + 1}")
    return data


def _check_item(item: JSON, where: str) -> None:
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: must be a mapping with text, thinking, tool_calls...")
    unknown = sorted(set(item) - _ITEM_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_ITEM_KEYS))}")
    for key in ("text", "thinking", "error"):
        if key in item and not isinstance(item[key], str):
            raise ConfigError(f"{where}: {key} must be a string")
    usage = item.get("usage")
    if usage is not None and not (isinstance(usage, dict) and set(usage) <= {"input_tokens", "output_tokens"}
                                  and all(isinstance(v, int) for v in usage.values())):
        raise ConfigError(f"{where}: usage must be {{input_tokens: N, output_tokens: N}}")
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        raise ConfigError(f"{where}: tool_calls must be a list of {{name, arguments}}")


class ScriptedProvider(Provider):
    """Answers from a script file; never touches the network."""

    def preflight(self, model: str, options: Mapping[str, JSON], where: str, *, workdir: Path) -> None:
        """The script can be read and is one (:func:`load_script`'s ConfigError otherwise);
        the agent's options are checked as a real endpoint would (a typo fails here too),
        then ignored: the script decides what the model says."""
        load_script(_script_path(model, workdir))
        check_options(options, REQUEST_OPTIONS, f"{where}: options")

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        path = _script_path(request.model, request.workdir)
        if request.purpose == "compaction":
            yield TextChunk(scripted_summary(request))
            return
        script = load_script(path)
        turn = sum(1 if message.role == "assistant" else message.meta.answers if message.meta.compaction
                   else 0 for message in request.messages)
        if turn >= len(script):
            raise ProviderError(
                f"the script {path} is exhausted: it has {len(script)} response(s) and this is turn {turn + 1}"
            )
        item = script[turn]
        if "usage" not in item and "context_window" in request.options:
            item = {**item, "usage": _estimated_usage(request, item)}
        yield from _respond(item, turn, cancel)


def _script_path(model: str, workdir: Path) -> Path:
    """The script file ``scripted/MODEL`` names: MODEL, ``~`` expanded, relative to ``workdir``."""
    path = Path(model).expanduser()
    return path if path.is_absolute() else workdir / path


def scripted_summary(request: ModelRequest) -> str:
    """A summariser's answer without a model: the summary's sections, the prompts of the
    conversation it was given under ``Goal`` (their first lines), and the earlier summary's
    goal lines kept."""
    text = "\n".join(message.text for message in request.messages)
    asked = [line[len("User: "):].strip()[:120] for line in text.splitlines() if line.startswith("User: ")]
    earlier = re.search(r"<summary>\n## Goal\n(.*?)\n## ", text, re.S)
    goals = [*(earlier.group(1).strip().splitlines() if earlier else []), *(f"- {line}" for line in asked)]
    return "\n".join(["## Goal", *goals, "## Decisions", "## State", "## Files and variables", "## Open questions"])


def _estimated_usage(request: ModelRequest, item: JSONObject) -> dict[str, int]:
    """What a server would report for ``request`` and ``item``'s answer, by Rienda's estimate."""
    sent = [request.system, json.dumps([tool.as_function() for tool in request.tools])]
    asked = context_fill(request.messages, None, sent).tokens
    answer = estimate_message(Message("assistant", item.get("text") or "", item.get("thinking") or ""))
    return {"input_tokens": asked, "output_tokens": answer}


def _respond(item: JSONObject, turn: int, cancel: CancelToken) -> Iterator[Chunk]:
    delay = float(item.get("chunk_delay_ms") or 0) / 1000
    if "error" in item:
        raise ProviderError(f"scripted failure: {item['error']}")
    for kind, text in ((ThinkingChunk, item.get("thinking") or ""), (TextChunk, item.get("text") or "")):
        for piece in _PIECES.findall(text):
            if delay:
                cancel.wait(delay)
            cancel.raise_if_cancelled()
            yield kind(piece)
    for index, call in enumerate(item.get("tool_calls") or []):
        cancel.raise_if_cancelled()
        call_id = str(call.get("id") or f"call_{turn + 1}_{index + 1}")
        yield ToolCallChunk(ToolCall(call_id, call["name"], call.get("arguments") or {}))
    if isinstance(item.get("usage"), dict):
        yield UsageChunk(Usage(**item["usage"]))
