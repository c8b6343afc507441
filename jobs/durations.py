"""How the engine writes a span of time for people: short, to the unit that matters
(``4.2 s``, ``3 min 12 s``, ``2 h 5 min``, ``3 days``). The admin page, ``manage.py check``
and ``sweep`` all write durations this way."""

from __future__ import annotations

from datetime import timedelta


def format_duration(delta: timedelta) -> str:
    seconds = max(delta.total_seconds(), 0.0)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{int(seconds)} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} days"
