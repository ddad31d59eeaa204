"""Recordings: an agent's model exchanges kept in a file beside the notebook (or the
working folder), and answered from it on later runs, offline, while hooks and tools run
live (``%rienda record NAME``, ``/record NAME``, ``rienda run --record NAME``).

- :mod:`.canonical`: a request's form (what it says, ids renumbered), its key, its first
  difference from another;
- :mod:`.records`: the file's lines (:class:`RecordedExchange`, a window), one reader, one writer;
- :mod:`.recording`: :class:`Recording`, the file open in a mode (``auto``, ``replay``,
  ``live``), matching and appending;
- :mod:`.provider`: :class:`RecordingProvider`, what a run asks instead of its provider.
"""

from __future__ import annotations

from .provider import RecordingProvider
from .recording import RECORD_MODE_ENV, RECORD_MODES, Miss, RecordMode, Recording, record_mode
from .records import RecordedExchange

__all__ = ["RECORD_MODES", "RECORD_MODE_ENV", "Miss", "RecordMode", "RecordedExchange", "Recording", "RecordingProvider",
           "record_mode"]
