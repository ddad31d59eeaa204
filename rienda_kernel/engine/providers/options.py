"""The options an endpoint (``config.yaml``) or an agent (front matter ``options:``) sets.

Two kinds:

- connection options, only in ``config.yaml`` (``providers: NAME: {...}``): ``base_url``,
  ``api_key_env``, ``connect_timeout``, ``read_timeout``, ``max_retries``, ``backoff``,
  ``max_wait``;
- request options, in ``config.yaml`` and in an agent's front matter (the agent's win):
  ``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``tool_choice`` (``auto``,
  ``none``, ``required`` or a tool's name), ``extra_body`` (a mapping merged into the
  request as is, for a server's own parameters) and ``context_window`` (the model's window
  in tokens, :mod:`.window`: never sent, except to Ollama as its ``num_ctx``). A vendor adds its own (Anthropic
  ``thinking``; Ollama ``think``, ``options``, ``keep_alive``) and translates them all
  into its wire format.

:func:`check_options` validates a mapping against a table of checkers and raises
:class:`ConfigError` naming where it came from and the option at fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ..common.hints import did_you_mean
from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError

__all__ = ["CONNECTION_OPTIONS", "REQUEST_OPTIONS", "Checker", "check_options", "mapping", "vendor_options"]

# An option's value from config.yaml or front matter -> the value as used, or ValueError saying what is wrong.
Checker = Callable[[JSON], JSON]


def _number(low: float, high: float = math.inf, *, low_open: bool = False) -> Checker:
    def check(value: JSON) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number, got {value!r}")
        if value < low or value > high or (low_open and value == low):
            bounds = f"{'above' if low_open else 'at least'} {low:g}" + (f" and at most {high:g}" if high != math.inf else "")
            raise ValueError(f"must be {bounds}, got {value!r}")
        return float(value)
    return check


def _whole(low: int) -> Checker:
    def check(value: JSON) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"must be a whole number of at least {low}, got {value!r}")
        return value
    return check


def _text(value: JSON) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r}")
    return value


def _variable(value: JSON) -> str | None:
    """An environment variable's name, or None for "no key"."""
    if value is None:
        return None
    return _text(value)


def _stop(value: JSON) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(s, str) and s for s in value):
        raise ValueError(f"must be a string or a list of strings, got {value!r}")
    return list(value)


def _tool_choice(value: JSON) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be auto, none, required or a tool's name, got {value!r}")
    return value


def mapping(example: str) -> Checker:
    """A checker for a mapping with string keys (``example`` shows one in the message)."""
    def check(value: JSON) -> JSONObject:
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise ValueError(f"must be a mapping such as {example}, got {value!r}")
        return dict(value)
    return check


CONNECTION_OPTIONS: Mapping[str, Checker] = {
    "base_url": _text,
    "api_key_env": _variable,
    "connect_timeout": _number(0, low_open=True),
    "read_timeout": _number(0, low_open=True),
    "max_retries": _whole(0),
    "backoff": _number(0),
    "max_wait": _number(0),
}

REQUEST_OPTIONS: Mapping[str, Checker] = {
    "max_tokens": _whole(1),
    "temperature": _number(0, 2),
    "top_p": _number(0, 1, low_open=True),
    "stop": _stop,
    "tool_choice": _tool_choice,
    "extra_body": mapping("{cache_prompt: true}"),
    "context_window": _whole(1),
}


def vendor_options(*leaving_out: str, **own: Checker) -> dict[str, Checker]:
    """:data:`REQUEST_OPTIONS` without those a vendor's API lacks, plus its own."""
    return {**{name: check for name, check in REQUEST_OPTIONS.items() if name not in leaving_out}, **own}


def check_options(options: Mapping[str, JSON], checkers: Mapping[str, Checker], where: str) -> JSONObject:
    """``options`` checked and normalised; ConfigError ``"<where>: ..."`` naming each
    unknown option (with the closest known one) or the first bad value."""
    unknown = sorted(set(options) - set(checkers))
    if unknown:
        hints = [name + did_you_mean(name, checkers, shown=str) for name in unknown]
        raise ConfigError(f"{where}: unknown option(s) {', '.join(hints)}; known: {', '.join(sorted(checkers))}")
    checked: JSONObject = {}
    for name, value in options.items():
        try:
            checked[name] = checkers[name](value)
        except ValueError as exc:
            raise ConfigError(f"{where}: option {name} {exc}") from exc
    return checked
