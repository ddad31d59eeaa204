"""Session ids: ``YYYYMMDD-HHMMSS-ffffff-xxxx``, which sort as plain strings by creation
time (a gate's session keeps the time part and adds its agent and that agent's id)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from secrets import token_hex

__all__ = ["new_session_id"]

_ONE_MICROSECOND = timedelta(microseconds=1)

_id_lock = threading.Lock()
_last_clock_time: datetime | None = None


def new_session_id(now: datetime | None = None) -> str:
    """A new id ``YYYYMMDD-HHMMSS-ffffff-xxxx`` (UTC time, 4 random hex digits).

    Ids sort as plain strings by creation time. With ``now=None`` the clock is read and
    ids are strictly increasing within the process: a time not after the last one is
    bumped to the last one plus 1 µs. An explicit ``now`` (naive means UTC) is encoded
    as given and does not take part in that ordering.
    """
    stamp = _next_clock_time() if now is None else _as_utc(now)
    return stamp.strftime("%Y%m%d-%H%M%S-%f-") + token_hex(2)


def _next_clock_time() -> datetime:
    """The current UTC time, strictly after every time this function returned before."""
    global _last_clock_time
    with _id_lock:
        stamp = datetime.now(timezone.utc)
        if _last_clock_time is not None and stamp <= _last_clock_time:
            stamp = _last_clock_time + _ONE_MICROSECOND
        _last_clock_time = stamp
        return stamp


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
