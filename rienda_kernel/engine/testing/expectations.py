"""What a replayed session must show instead of "the same as recorded": ``<id>.expect.yaml``.

A replay expects every call to come out as it was recorded. When a hook changes on
purpose, a sidecar file next to the session (``<session-id>.expect.yaml``) says what must
now happen to the calls the change is meant to alter::

    confirm: deny                     # how ctx.confirm is answered in this replay: allow | deny
    calls:
      - match: {id: call_1_2}         # the recorded call id...
        refused: true                 # ...must now be refused (by any hook; or refused: guard)
        reason: refused by the user   # optional: the refusal's text must contain this
      - match: {tool: shell, arguments: {command: 'rm\\s+-rf'}}   # argument values are regexes
        refused: guard
      - match: {id: call_1_1}
        allowed: true                 # must now run
        arguments: {url: "https://example.org"}   # exactly the arguments the tool now gets
        result: "GOT IT"              # the result text now, or {text: ..., isError: ...}

Contracts:
- ``match`` selects recorded calls by ``id``, ``tool`` (name) and ``arguments`` (each named
  argument as the model sent it must match the regular expression, searched; non-string
  values are matched as their JSON); every key given must hold. The first entry that
  matches a call applies to it; an entry that matches no call is a failure of its own.
- What an entry states (refused or allowed, arguments, result) replaces the comparison
  with the recording for that aspect; what it leaves out is still compared with the
  recording. A refused call has no arguments or result to expect.
- A malformed file raises :class:`ConfigError` naming the file, the entry and the key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path


from ..home import yaml_file
from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError

__all__ = ["CallExpectation", "Expectations", "expectations_beside", "load_expectations"]

SUFFIX = ".expect.yaml"
_ENTRY_KEYS = ("match", "refused", "allowed", "reason", "arguments", "result")
_MATCH_KEYS = ("id", "tool", "arguments")


@dataclass(frozen=True)
class CallExpectation:
    """One entry of ``calls``: which calls it selects and what must hold for them.

    ``refused`` is True (must be refused), False (must be allowed) or None (as recorded);
    ``arguments`` and ``result`` (text, isError or None) are None when not stated.
    """

    where: str  # e.g. "calls[2] of sessions/x.expect.yaml", for messages
    match_id: str | None = None
    match_tool: str | None = None
    match_arguments: JSONObject = field(default_factory=dict)
    refused: bool | None = None
    refused_by: str | None = None
    reason: str | None = None
    arguments: JSONObject | None = None
    result: tuple[str, bool | None] | None = None

    def matches(self, call_id: str, name: str, arguments: JSON) -> bool:
        """Whether this entry selects the recorded call (``arguments`` as the model sent them)."""
        if self.match_id is not None and call_id != self.match_id:
            return False
        if self.match_tool is not None and name != self.match_tool:
            return False
        if self.match_arguments and not isinstance(arguments, dict):
            return False
        return all(key in arguments and _value_matches(pattern, arguments[key])
                   for key, pattern in self.match_arguments.items())

    def refusal_problems(self, call: JSON) -> list[str]:
        """``call`` is a :class:`~.report.CallReplay`; what it breaks of ``refused``/``allowed``."""
        now_text = call.now_result.text if call.now_result else ""
        if self.refused is False:
            return [f"expected allowed, but now refused by hook {call.now_refused_by}: {now_text}"] if call.now_refused_by else []
        by = f" by hook {self.refused_by}" if self.refused_by else ""
        if not call.now_refused_by:
            return [f"expected refused{by}, but it is allowed now"]
        if self.refused_by and call.now_refused_by != self.refused_by:
            return [f"expected refused{by}, but refused by hook {call.now_refused_by}"]
        if self.reason and self.reason not in now_text:
            return [f"expected a refusal reason containing {self.reason!r}, got {now_text!r}"]
        return []

    def argument_problems(self, call: JSON) -> list[str]:
        if call.now_refused_by:
            return [f"expected arguments {_json(self.arguments)}, but the call is refused by hook {call.now_refused_by}"]
        if call.now_arguments != self.arguments:
            return [f"expected arguments {_json(self.arguments)}, now {_json(call.now_arguments)}"]
        return []

    def result_problems(self, call: JSON) -> list[str]:
        assert self.result is not None
        text, is_error = self.result
        if call.now_refused_by:
            return [f"expected result {text!r}, but the call is refused by hook {call.now_refused_by}"]
        if call.now_result is None:
            return [f"expected result {text!r}, but the call now runs and its result is not known "
                    "without running the tools (--run-tools)"]
        found = []
        if call.now_result.text != text:
            found.append(f"expected result {text!r}, now {call.now_result.text!r}")
        if is_error is not None and call.now_result.is_error != is_error:
            found.append(f"expected isError {str(is_error).lower()}, now {str(call.now_result.is_error).lower()}")
        return found


@dataclass(frozen=True)
class Expectations:
    """A whole sidecar file: the confirm answer (None: the replay's own) and the entries."""

    path: Path
    confirm: bool | None = None
    calls: tuple[CallExpectation, ...] = ()

    def for_call(self, call_id: str, name: str, arguments: JSON) -> CallExpectation | None:
        return next((entry for entry in self.calls if entry.matches(call_id, name, arguments)), None)


def expectations_beside(session_path: Path) -> Expectations | None:
    """The expectations of the session file ``session_path`` (``<id>.expect.yaml`` in the
    same folder), or None when there is none."""
    path = Path(session_path).with_name(Path(session_path).stem + SUFFIX)
    return load_expectations(path) if path.is_file() else None


def load_expectations(path: Path) -> Expectations:
    """Parse one expectations file; ConfigError naming the file, entry and key."""
    path = Path(path)
    try:
        data, _, _ = yaml_file.load(path.read_text(encoding="utf-8"))  # no key twice; bounded
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except yaml_file.YAMLProblem as exc:
        raise ConfigError(f"{path}:{exc.line or '?'}: {exc.problem}") from exc
    data = {} if data is None else data
    _check(isinstance(data, dict), f"{path}: expected a mapping with 'calls' (and optionally 'confirm')")
    _check_keys(data, ("confirm", "calls"), str(path))
    confirm = data.get("confirm")
    _check(confirm in (None, "allow", "deny"), f"{path}: confirm must be allow or deny, got {confirm!r}")
    entries = data.get("calls") or []
    _check(isinstance(entries, list), f"{path}: calls must be a list of entries, each with a match")
    calls = tuple(_entry(entry, f"calls[{index}] of {path}") for index, entry in enumerate(entries))
    return Expectations(path, None if confirm is None else confirm == "allow", calls)


def _entry(entry: JSON, where: str) -> CallExpectation:
    _check(isinstance(entry, dict), f"{where}: an entry is a mapping with match and what to expect")
    _check_keys(entry, _ENTRY_KEYS, where)
    match = entry.get("match")
    _check(isinstance(match, dict) and match, f"{where}: match must be a mapping of {', '.join(_MATCH_KEYS)}")
    _check_keys(match, _MATCH_KEYS, f"{where}: match")
    for key in ("id", "tool"):
        _check(match.get(key) is None or isinstance(match[key], str), f"{where}: match.{key} must be a string")
    patterns = match.get("arguments") or {}
    _check(isinstance(patterns, dict), f"{where}: match.arguments must map argument names to patterns")
    refused, by = _refusal(entry, where)
    arguments = entry.get("arguments")
    _check(arguments is None or isinstance(arguments, dict), f"{where}: arguments must be a mapping")
    _check(not (refused and (arguments is not None or "result" in entry)),
           f"{where}: a refused call has no arguments or result to expect")
    reason = entry.get("reason")
    _check(reason is None or (isinstance(reason, str) and refused), f"{where}: reason (a string) goes with refused")
    expectation = CallExpectation(
        where, match.get("id"), match.get("tool"), {k: _pattern(v, f"{where}: match.arguments.{k}") for k, v in patterns.items()},
        refused, by, reason, arguments, _result(entry.get("result"), where) if "result" in entry else None)
    _check(any(v is not None for v in (refused, arguments, expectation.result)),
           f"{where}: say what to expect: refused, allowed, arguments or result")
    return expectation


def _refusal(entry: JSONObject, where: str) -> tuple[bool | None, str | None]:
    refused, allowed = entry.get("refused"), entry.get("allowed")
    _check(refused is None or allowed is None, f"{where}: give refused or allowed, not both")
    _check(refused is None or refused is True or (isinstance(refused, str) and refused),
           f"{where}: refused must be true or the name of the hook that refuses")
    _check(allowed is None or allowed is True, f"{where}: allowed must be true (or use refused)")
    if refused is not None:
        return True, refused if isinstance(refused, str) else None
    return (False, None) if allowed else (None, None)


def _result(value: JSON, where: str) -> tuple[str, bool | None]:
    if isinstance(value, str):
        return value, None
    _check(isinstance(value, dict) and isinstance(value.get("text"), str),
           f"{where}: result must be the text, or a mapping with text (and isError)")
    _check_keys(value, ("text", "isError"), f"{where}: result")
    _check(value.get("isError") in (None, True, False), f"{where}: result.isError must be true or false")
    return value["text"], value.get("isError")


def _pattern(value: JSON, where: str) -> JSON:
    if not isinstance(value, str):
        return value
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"{where}: not a regular expression: {exc}") from exc


def _value_matches(pattern: re.Pattern[str] | JSON, value: JSON) -> bool:
    if isinstance(pattern, re.Pattern):
        return pattern.search(value if isinstance(value, str) else _json(value)) is not None
    return bool(pattern == value)


def _check_keys(mapping: JSONObject, allowed: tuple[str, ...], where: str) -> None:
    unknown = [str(key) for key in mapping if key not in allowed]
    _check(not unknown, f"{where}: unknown key {', '.join(map(repr, unknown))}; the keys are {', '.join(allowed)}")


def _check(condition: JSON, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
