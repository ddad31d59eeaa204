"""One hook point's chain: each hook's output is the next hook's input.

Shared by the host process (``hooks.HookChain`` records every hook's decision) and the V8
side (a sandbox runs a whole point's chain as one job): :func:`merge` is the one rule for
what a hook's returned fields replace, so both sides compute the same next input from the
same outcomes, and :func:`run_chain` is the one loop. Standard library only: a worker
process imports it.

Contracts (Rienda's hooks documentation, "Chaining and order"):
- Every returned field is optional and replaces only itself; a field left out, ``undefined``
  or ``null`` keeps its value; a field of the wrong type, or one the point does not know, is
  ignored (:func:`merge` says which, for a diagnostic).
- ``beforeToolExecute``: a returned object whose ``allow`` is ``false`` refuses the call and
  no further hook runs (:func:`refuses`); ``beforeCompact``: likewise ``cancel: true``
  cancels the compaction (the rule's ``stop``).
- A hook that fails (a throw, out of memory, a value that cannot be read) is reported and
  skipped, as if it returned nothing; :class:`~..errors.Interrupted` ends the chain.
- Unless the rule names it fail-closed (``fail_closed``: its index among the links, at a
  refusable point only): then its failure refuses the call and no further hook runs, in the
  worker as on the host (:meth:`Progress.after`).
- Each hook runs on its own: ``call_one`` gives it a runtime of its own (the sandbox's
  promise), and it sees only the payload, never another hook's runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from ..common.json_value import JSON, JSONObject
from ..errors import Interrupted, SandboxError

if TYPE_CHECKING:
    from ..cancel import CancelToken

__all__ = ["ChainRule", "HookSource", "JSValue", "Outcome", "Progress", "chain_by_calls", "field_changes", "js_type",
           "merge", "refuses", "run_chain", "type_name"]

# One hook of a chain: (path, source) of its module.
HookSource = tuple[str, str]  # one hook as a sandbox runs it: its file's path, its source


@dataclass(frozen=True)
class JSValue:
    """A value returned by JavaScript: ``kind`` is its JS type (``typeof``, with "null"
    and "array" told apart); ``value`` its JSON form (a string for functions, symbols
    and bigints; None for undefined)."""

    kind: str
    value: JSON = None


# What one hook came to: its value or the error it failed with.
Outcome: TypeAlias = JSValue | SandboxError
_Host = TypeVar("_Host")  # what serves one hook's host calls (a protocol.HostHandler)

_TYPES: dict[str, type] = {"string": str, "boolean": bool, "object": dict}


@dataclass(frozen=True)
class ChainRule:
    """What a point carries from hook to hook.

    ``carry`` maps each carried field to the index of the payload argument (an object)
    that holds it; ``types`` maps every field a hook may return to its JSON type
    (``"string"``, ``"boolean"``, ``"object"``), the carried ones and those only checked
    (``allow``, ``reason``); ``refusable``: a returned ``stop`` field with the ``stop`` value
    (``allow: false``, ``cancel: true``) ends the chain; ``fail_closed``: the links (their
    indexes) whose failure ends it too, refusing (a ``closable`` rule only: a tool call's).
    """

    carry: Mapping[str, int] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    refusable: bool = False
    fail_closed: frozenset[int] = frozenset()
    stop: tuple[str, bool] = ("allow", False)
    closable: bool = False

    def current(self, payload: Sequence[JSON]) -> JSONObject:
        """The carried fields' values in ``payload``."""
        return {key: payload[index][key] for key, index in self.carry.items()}

    def advance(self, payload: Sequence[JSON], updated: Mapping[str, JSON]) -> list[JSON]:
        """``payload`` with the carried fields set to ``updated``'s (a copy: the caller's
        payload is never changed)."""
        out = list(payload)
        for index in set(self.carry.values()):
            out[index] = dict(out[index])
        for key, index in self.carry.items():
            out[index][key] = updated[key]
        return out

    def python_types(self) -> dict[str, type]:
        return {key: _TYPES[name] for key, name in self.types.items()}

    def closes_on_failure(self, index: int) -> bool:
        """Whether link ``index`` failing refuses the call and ends the chain."""
        return self.closable and index in self.fail_closed

    def from_link(self, start: int) -> ChainRule:
        """The rule for the links from ``start`` on (a chain resumed there: indexes shift)."""
        return replace(self, fail_closed=frozenset(i - start for i in self.fail_closed if i >= start))

    def to_wire(self) -> JSONObject:
        return {"carry": dict(self.carry), "types": dict(self.types), "refusable": self.refusable,
                "fail_closed": sorted(self.fail_closed), "stop": list(self.stop), "closable": self.closable}

    @classmethod
    def from_wire(cls, data: Mapping[str, JSON]) -> ChainRule:
        stop = data.get("stop", ("allow", False))
        return cls(dict(data["carry"]), dict(data["types"]), bool(data["refusable"]),
                   frozenset(data.get("fail_closed", ())), (str(stop[0]), bool(stop[1])), bool(data.get("closable")))


def merge(current: Mapping[str, JSON], returned: Mapping[str, JSON],
          types: Mapping[str, type]) -> tuple[JSONObject, list[str]]:
    """``current`` with the fields ``returned`` replaces, and the problems found (each a
    phrase: ``"system must be a string, got a number"``, ``"unknown field(s) x"``)."""
    updated = dict(current)
    problems = []
    for key, value in returned.items():
        if value is None or key not in types:
            continue
        if not isinstance(value, types[key]) or (types[key] is not bool and isinstance(value, bool)):
            problems.append(f"{key} must be {type_name(types[key])}, got {js_type(value)}")
        elif key in updated:
            updated[key] = value
    unknown = sorted(set(returned) - set(types))
    if unknown:
        problems.append(f"unknown field(s) {', '.join(unknown)}")
    return updated, problems


def refuses(returned: Mapping[str, JSON] | None, stop: tuple[str, bool] = ("allow", False)) -> bool:
    """Whether a hook's returned object ends its chain: ``beforeToolExecute``'s refusing the
    call (``allow: false``, the default ``stop``), ``beforeCompact``'s cancelling (``cancel: true``)."""
    return returned is not None and returned.get(stop[0]) is stop[1]


class Progress:
    """A chain's input as its hooks' outcomes come in: :attr:`payload` is what the next
    hook gets; :meth:`after` takes link ``index``'s outcome and says whether the chain ends
    there (a refusal, or the failure of a fail-closed link)."""

    def __init__(self, rule: ChainRule, payload: Sequence[JSON]) -> None:
        self.rule = rule
        self.payload = list(payload)
        self._types = rule.python_types()
        self._current = rule.current(payload)

    def after(self, index: int, outcome: Outcome) -> bool:
        if isinstance(outcome, SandboxError):
            return self.rule.closes_on_failure(index)
        if outcome.kind != "object":
            return False
        if self.rule.refusable and refuses(outcome.value, self.rule.stop):
            return True
        updated, _ = merge(self._current, outcome.value, self._types)
        if updated != self._current:
            self.payload, self._current = self.rule.advance(self.payload, updated), updated
        return False


def run_chain(links: Sequence[HookSource], payload: Sequence[JSON], rule: ChainRule,
              call_one: Callable[[int, HookSource, list[JSON]], JSValue],
              on_step: Callable[[int, Outcome], None]) -> None:
    """Run ``links`` in order: ``call_one(index, link, payload)`` returns the hook's
    JSValue or raises; ``on_step(index, outcome)`` hears each hook's outcome as soon as
    it is known, before the next hook starts. Stops after a refusal (a fail-closed link's
    failure is one); lets
    :class:`Interrupted` (and anything not a SandboxError) propagate."""
    progress = Progress(rule, payload)
    for index, link in enumerate(links):
        outcome: Outcome
        try:
            outcome = call_one(index, link, progress.payload)
        except Interrupted:
            raise
        except SandboxError as exc:
            outcome = exc
        on_step(index, outcome)
        if progress.after(index, outcome):
            return


def chain_by_calls(call: Callable[[str, str, str, list[JSON], _Host, CancelToken, Sequence[tuple[int, str]]], JSValue],
                   links: Sequence[HookSource], export: str, payload: list[JSON],
                   rule: ChainRule, host_for: Callable[[int], _Host], cancel: CancelToken,
                   frozen: Sequence[tuple[int, str]] = (),
                   on_step: Callable[[int, Outcome], None] = lambda index, outcome: None) -> None:
    """``call_chain`` (:class:`.protocol.SandboxLike`'s contract) for a sandbox whose
    hooks each run as one ``call(path, source, export, payload, host, cancel, frozen)``."""
    def call_one(index: int, link: HookSource, args: list[JSON]) -> JSValue:
        return call(link[0], link[1], export, args, host_for(index), cancel, frozen)

    run_chain(links, payload, rule, call_one, on_step)


def type_name(kind: type) -> str:
    return {str: "a string", bool: "a boolean", dict: "an object"}[kind]


def js_type(value: JSON) -> str:
    return {str: "a string", bool: "a boolean", dict: "an object", list: "an array",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def field_changes(before: JSONObject, after: JSONObject) -> JSONObject:
    """Field-level differences between a point's carried fields ``before`` and ``after``
    a hook, safe to save (the decision ledger's ``changes``).

    Arguments are compared key by key (``arguments.url``) with both values: the model's
    arguments are in the session anyway. Text fields (``system``, ``text``, ``thinking``)
    record only their sizes: the text a hook replaced is often what it meant to keep out
    of the session (a redacted secret, a per-turn system prompt).
    """
    changes: JSONObject = {}
    for key, old in before.items():
        new = after[key]
        if old == new and type(old) is type(new):
            continue
        if key == "arguments" and isinstance(old, dict) and isinstance(new, dict):
            for name in sorted(set(old) | set(new)):
                if old.get(name, _MISSING) != new.get(name, _MISSING):
                    changes[f"arguments.{name}"] = {"before": old.get(name), "after": new.get(name)}
        elif isinstance(old, str) and isinstance(new, str):
            changes[key] = {"before_chars": len(old), "after_chars": len(new)}
        else:
            changes[key] = {"before": old, "after": new}
    return changes


_MISSING = object()
