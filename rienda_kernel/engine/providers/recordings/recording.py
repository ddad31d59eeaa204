"""A recording: the model exchanges of one front end's turns, kept in a file beside the
notebook and answered from it on later runs.

A :class:`Recording` is owned by a :class:`~...runtime.rienda.Rienda` (``Rienda.record``):
every conversation of that Rienda (the lead's, its sub-agents', the compaction summariser)
sends its model requests through a :class:`~.provider.RecordingProvider` around it. Its
:data:`RecordMode`:

- ``auto``: a request the file holds is answered from it; any other is asked of the model
  and the exchange appended;
- ``replay``: the model is never asked; a request the file does not hold ends the run with
  one line naming the cell or turn and the first difference;
- ``live``: every request is asked of the model; the file is rewritten with this run's
  exchanges (from the first one on).

A request is matched by its form (:mod:`.canonical`); identical requests are answered in
the order they were recorded, counting from when the recording was opened. A run answered
wholly from the file leaves it byte for byte as it was. Thread-safe: sub-agents may ask
from other threads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ...common.hints import did_you_mean
from ...common.json_value import JSONObject
from ...errors import ConfigError
from ..window import Window
from .canonical import closeness, first_difference, message_digests
from .records import RecordedExchange, RecordedWindow, header_line, line_of, read_recording

__all__ = ["RECORD_MODES", "RECORD_MODE_ENV", "Miss", "RecordMode", "Recording", "record_mode"]

RecordMode = Literal["auto", "replay", "live"]
RECORD_MODES: tuple[RecordMode, ...] = get_args(RecordMode)
RECORD_MODE_ENV = "RIENDA_RECORD_MODE"  # forces a mode on every recording a notebook opens (CI)
_BASES = 8  # how many of the latest exchanges a new one may be written as going on from

_MEANINGS: dict[RecordMode, str] = {
    "auto": "answered from it where found, else the model is asked and the exchange added",
    "replay": "answered only from it: the model is never asked",
    "live": "the model is always asked, and the file rewritten with this run's exchanges",
}


def record_mode(given: str | None, given_where: str, *, environment_first: bool) -> RecordMode:
    """The mode a recording opens in: ``given`` (an option, named ``given_where``) and
    ``$RIENDA_RECORD_MODE``, the environment first when ``environment_first`` (a notebook,
    so CI can force a mode on it unedited), else the option first (a command line); else
    ``auto``. ConfigError naming where a word that is not a mode came from."""
    environment = (os.environ.get(RECORD_MODE_ENV, "").strip(), f"${RECORD_MODE_ENV}")
    option = ((given or "").strip(), given_where)
    for value, where in (environment, option) if environment_first else (option, environment):
        if value:
            for mode in RECORD_MODES:
                if value == mode:
                    return mode
            raise ConfigError(f"{where}: {value!r} is not a recording mode{did_you_mean(value, RECORD_MODES)} "
                              f"(modes: {', '.join(RECORD_MODES)})")
    return "auto"


@dataclass(frozen=True)
class Miss:
    """A request the recording does not hold: ``difference``, the first difference from
    the nearest recorded request, hooks named where they explain it; ``new``: the request
    only goes on where the recording stops (a turn it never reached, or an empty file),
    which is no divergence; ``nearest``: that recorded exchange's number (None: none)."""

    difference: str
    new: bool
    nearest: int | None


class Recording:
    """One recording file, open in one mode (see the module docstring). ``name``: the file
    as the user named it (what every line says); ``path``: where it is."""

    def __init__(self, path: Path, name: str, mode: RecordMode) -> None:
        if mode == "replay" and not path.exists():
            raise ConfigError(f"{name}: there is no recording to replay (replay mode never asks the model); "
                              "record it first, in mode auto or live")
        self.path = path
        self.name = name
        self.mode: RecordMode = mode
        self.label: str | None = None  # the front end's name of the running turn ("cell [3]"), if it has one
        self.turns = 0  # top-level turns run since the recording was opened
        self.answered = 0  # requests answered from the file, since it was opened
        self.asked = 0  # requests asked of the model and recorded
        self._lock = threading.Lock()
        exchanges, windows = read_recording(path, name) if mode != "live" else ([], [])
        self._exchanges: list[RecordedExchange] = exchanges
        self._keys: dict[str, list[int]] = {}
        for index, exchange in enumerate(exchanges):
            self._keys.setdefault(exchange.key, []).append(index)
        self._next: dict[str, int] = {}
        self._windows: dict[str, Window | None] = {w.model: w.window for w in windows}
        self._digests: dict[int, tuple[str, ...]] = {}
        self._started = mode != "live"  # live: the file is rewritten from the first line written

    # -- what the front ends see ------------------------------------------------------------
    @property
    def exchanges(self) -> int:
        return len(self._exchanges)

    def describe(self) -> str:
        """One line: the file, its mode and what that means, how many exchanges it holds."""
        held = f"{self.exchanges} exchange{'' if self.exchanges == 1 else 's'}"
        return f"Recording {self.name} (mode {self.mode}: {_MEANINGS[self.mode]}); it holds {held}."

    def begin_turn(self) -> None:
        """A top-level turn starts: its requests are named after it (``turn N``, or the label)."""
        with self._lock:
            self.turns += 1

    @property
    def place(self) -> str:
        """The running turn as lines name it: the front end's label, else ``turn N``."""
        return self.label or f"turn {self.turns}"

    # -- matching ---------------------------------------------------------------------------
    def take(self, key: str) -> tuple[int, RecordedExchange] | None:
        """The next recorded answer to the request whose form has ``key`` (its number in
        the file, 1 for the first, and the exchange), or None when none is left."""
        with self._lock:
            found = self._keys.get(key)
            position = self._next.get(key, 0)
            if not found or position >= len(found):
                return None
            self._next[key] = position + 1
            self.answered += 1
            index = found[position]
            return index + 1, self._exchanges[index]

    def miss(self, form: JSONObject, hooks: Sequence[str], agent_system: str | None) -> Miss:
        """What sets ``form`` apart from the nearest recorded request (of those as near, the
        latest recorded), hooks named where they
        explain it (``hooks``: those that ran on it; ``agent_system``: the agent's own prompt)."""
        with self._lock:
            exchanges = list(enumerate(self._exchanges))
        if not exchanges:
            return Miss("the recording holds no exchange yet", True, None)
        digests = message_digests(form)
        index, nearest = max(exchanges, key=lambda item: (closeness(form, digests, item[1].request,
                                                                    self._digests_of(*item)), item[0]))
        recorded_digests = self._digests_of(index, nearest)
        difference = first_difference(form, nearest.request) + _hooks_note(form, nearest, hooks, agent_system)
        return Miss(difference, _goes_on(form, nearest.request, digests, recorded_digests), index + 1)

    def _base(self, exchange: RecordedExchange) -> tuple[int, RecordedExchange, int] | None:
        """Of the last :data:`_BASES` exchanges, the one whose messages ``exchange`` repeats
        most of (at least one), with that count; None for none."""
        digests = message_digests(exchange.request)
        best: tuple[int, RecordedExchange, int] | None = None
        for index in range(len(self._exchanges) - 1, max(-1, len(self._exchanges) - 1 - _BASES), -1):
            earlier = self._exchanges[index]
            shared = 0
            for mine, theirs in zip(digests, self._digests_of(index, earlier)):
                if mine != theirs:
                    break
                shared += 1
            if shared and (best is None or shared > best[2]):
                best = (index + 1, earlier, shared)
        return best

    def _digests_of(self, index: int, exchange: RecordedExchange) -> tuple[str, ...]:
        if index not in self._digests:
            self._digests[index] = message_digests(exchange.request)
        return self._digests[index]

    # -- windows ----------------------------------------------------------------------------
    def window(self, model_id: str) -> tuple[bool, Window | None]:
        """Whether the file says what ``model_id``'s window is (a live recording: this run's
        file), and that window."""
        with self._lock:
            return model_id in self._windows, self._windows.get(model_id)

    def add_window(self, model_id: str, window: Window | None) -> None:
        """Keep ``model_id``'s window, once per model."""
        with self._lock:
            if model_id in self._windows:
                return
            self._windows[model_id] = window
            self._write(line_of(RecordedWindow(model_id, window).to_json()))

    # -- recording --------------------------------------------------------------------------
    def add(self, exchange: RecordedExchange) -> int:
        """Append ``exchange`` (asked of the model just now) to the file, written as what it
        adds to the recent exchange it goes on from (:meth:`_base`); its number there."""
        with self._lock:
            self._write(line_of(exchange.to_json(self._base(exchange))))
            self._exchanges.append(exchange)
            self._keys.setdefault(exchange.key, []).append(len(self._exchanges) - 1)
            self._next[exchange.key] = len(self._keys[exchange.key])  # answered now: not again in this run
            self.asked += 1
            return len(self._exchanges)

    def _write(self, line: str) -> None:
        """One line into the file (a live recording's first write starts the file anew)."""
        fresh = not self._started or not self.path.exists() or self.path.stat().st_size == 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("w" if not self._started else "a", encoding="utf-8", newline="\n") as file:
                file.write((header_line() if fresh else "") + line)
        except OSError as exc:
            raise ConfigError(f"{self.name}: the recording cannot be written: {exc}") from exc
        self._started = True


def _goes_on(form: JSONObject, recorded: JSONObject, digests: Sequence[str], recorded_digests: Sequence[str]) -> bool:
    """Whether ``form`` only continues the recorded request (a turn the recording never
    reached): the same model, system prompt, tools and options, and every recorded message
    then more."""
    same = all(form.get(field) == recorded.get(field) for field in ("model", "purpose", "system", "tools", "options"))
    return same and len(digests) > len(recorded_digests) and tuple(digests[:len(recorded_digests)]) == tuple(
        recorded_digests)


def _hooks_note(form: JSONObject, nearest: RecordedExchange, hooks: Sequence[str], agent_system: str | None) -> str:
    """Which hooks explain a difference: for the system prompt, the hook that now rewrites
    it (or no longer runs), or the agent's own prompt changing; else the hooks added since."""
    added = [name for name in hooks if name not in nearest.hooks]
    gone = [name for name in nearest.hooks if name not in hooks]
    if form.get("system") != nearest.request.get("system"):
        recorded_base = nearest.agent_system if nearest.agent_system is not None else nearest.request.get("system")
        now_base = agent_system if agent_system is not None else form.get("system")
        if recorded_base != now_base:
            return " (the agent's system prompt changed)"
        if added:
            return f" (hook {', '.join(added)} rewrote it)"
        if gone:
            return f" (hook {', '.join(gone)} no longer runs)"
        return f" (hook {', '.join(hooks)} rewrote it otherwise)" if hooks else ""
    if added or gone:
        return "".join([f" (hooks added since the recording: {', '.join(added)})" if added else "",
                        f" (hooks gone since the recording: {', '.join(gone)})" if gone else ""])
    return ""
