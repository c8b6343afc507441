"""Rates ("60/m": at most 60 starts in any minute) and the sliding window that enforces one.

A rate is a sliding window, not calendar buckets: at most ``count`` starts in any period of
its length, (now − period, now]. The window of a rate key keeps the recent starts as
``[time, starts]`` pairs (in microseconds of the database's clock), pruned past the period,
as JSON text on the key's gate row. A claim's starts are recorded at the end of the
``GRAIN``-th of the period they fall in (claims within one grain share a pair): each start
then stays in the window up to a grain longer than it happened, never shorter, so the rate
is never exceeded and a start waits at most a grain (1/64 of the period) longer than an
exact window would make it; and the window holds at most 64 pairs however many claims a
period has, so its row stays small (no TOAST) at any rate.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

#: The units a rate may name, in seconds.
UNITS = {"s": 1, "m": 60, "h": 3600}
#: The most starts a rate may allow in its period: each claim that starts jobs of a key
#: adds a pair to its window, so the window's size is bounded by the rate.
MOST_STARTS = 100_000
MICROS = 1_000_000
#: The grains a period's window is kept in (see the module's docstring).
GRAIN = 64
#: A claim held back by a rate waits until this share of the rate is free again (at least
#: one start, at most what it wants): a window frees as its oldest claims age out, and
#: waking for each single start would make claims of one job each, a claim per start.
GATHER = 0.05

_RATE = re.compile(r"^\s*(\d+)\s*/\s*([smh])\s*$")


@dataclass(frozen=True)
class Rate:
    """At most ``count`` starts in any ``period`` seconds."""

    count: int
    period: int

    @classmethod
    def parse(cls, text: object, *, where: str = "rate") -> Rate:
        """``"60/m"``, ``"5/s"``, ``"100/h"``; anything else is refused with ``ValueError``."""
        if isinstance(text, Rate):
            return text
        found = _RATE.match(text) if isinstance(text, str) else None
        if found is None:
            raise ValueError(f"{where} must read like '60/m' (starts per s, m or h), got {text!r}.")
        count = int(found.group(1))
        if not 1 <= count <= MOST_STARTS:
            raise ValueError(f"{where} must allow 1 to {MOST_STARTS:,} starts per period, got {count:,}.")
        return cls(count, UNITS[found.group(2)])

    @classmethod
    def declared(cls, text: object, where: str) -> Rate:
        """A rate written in code or settings: a bad one is ``ImproperlyConfigured``."""
        try:
            return cls.parse(text, where=where)
        except ValueError as exc:
            raise ImproperlyConfigured(str(exc)) from None

    def __str__(self) -> str:
        unit = next(name for name, seconds in UNITS.items() if seconds == self.period)
        return f"{self.count}/{unit}"

    def describe(self) -> str:
        unit = {1: "second", 60: "minute", 3600: "hour"}[self.period]
        return f"{self.count:,} a {unit}"


class Window:
    """The recent starts of one rate key (its gate row's ``recent``), and the leases its
    type's gate handed out (``leases``; ``jobs.flow.leases``): ``(until, jobs, worker)``,
    each counted as ``jobs`` running against the type's concurrency until ``until`` (µs)."""

    def __init__(
        self, starts: list[tuple[int, int]] | None = None, leases: list[tuple[int, int, str]] | None = None
    ) -> None:
        self.starts = sorted(starts or [])
        self.leases = list(leases or [])

    @classmethod
    def load(cls, text: str | None) -> Window:
        """A window from its text: the pairs of ``recent``, or, where the gate holds leases,
        ``{"starts": pairs, "leases": triples}`` (``with_pending``)."""
        if not text:
            return cls()
        try:
            found = json.loads(text)
            pairs, leases = (found["starts"], found["leases"]) if isinstance(found, dict) else (found, [])
            return cls(
                [(int(at), int(count)) for at, count in pairs],
                [(int(until), int(jobs), str(worker)) for until, jobs, worker in leases],
            )
        except (TypeError, ValueError, KeyError):
            return cls()  # a row written by hand: start afresh rather than fail every claim

    def dump(self) -> str:
        """The starts, as the gate's ``recent`` stores them."""
        return json.dumps([[at, count] for at, count in self.starts], separators=(",", ":"))

    def dump_leases(self) -> str:
        """The leases, as the gate's ``leases`` stores them."""
        return (
            json.dumps([list(lease) for lease in self.leases], separators=(",", ":")) if self.leases else ""
        )

    def leased(self, since: int) -> int:
        """The jobs the leases ending after ``since`` (µs) count as running."""
        return sum(jobs for until, jobs, _ in self.leases if until > since)

    def forget_before(self, since: int) -> None:
        """Forget the starts at or before ``since`` (µs): they left every window that counts them."""
        self.starts = [pair for pair in self.starts if pair[0] > since]

    @property
    def newest(self) -> int | None:
        return self.starts[-1][0] if self.starts else None

    def used(self, now: int, rate: Rate) -> int:
        """Starts in (now − period, now] (a start recorded at the end of its grain, after
        ``now``, counts too: it happened before ``now``)."""
        since = now - rate.period * MICROS
        return sum(count for at, count in self.starts if at > since)

    def room(self, now: int, rate: Rate) -> int:
        return max(0, rate.count - self.used(now, rate))

    def frees_at(self, now: int, rate: Rate, taking: int = 0, need: int = 1) -> int:
        """When (microseconds) the window ending then has room for ``need`` more starts,
        counting ``taking`` more starts at ``now``: the moment enough of the oldest starts
        leave it."""
        pairs = [*self.starts, (now, taking)] if taking else list(self.starts)
        since = now - rate.period * MICROS
        in_window = [(at, count) for at, count in pairs if at > since]
        over = sum(count for _, count in in_window) - rate.count + min(need, rate.count)
        for at, count in in_window:
            over -= count
            if over <= 0:
                return at + rate.period * MICROS
        return now

    def record(self, now: int, count: int, period: int) -> None:
        """``count`` starts at ``now``, kept at the end of their grain of ``period`` seconds."""
        if count <= 0:
            return
        grain = max(1, period * MICROS // GRAIN)
        at = -(-now // grain) * grain  # rounded up: the start stays in the window a bit longer
        if self.starts and self.starts[-1][0] == at:
            self.starts[-1] = (at, self.starts[-1][1] + count)
        else:
            self.starts.append((at, count))
            self.starts.sort()


def with_pending(recent: str, pending_at: int | None, pending: int | None, leases: str = "") -> str:
    """A gate's window as text with its pending pair in it: the starts of the latest grain
    that claims within the gate's spare took (``jobs.flow.spare``), kept apart from the
    window's text until a claim of a later grain moves them in; and its ``leases``, where it
    holds any (the text is then ``Window.load``'s object form)."""
    if (pending_at is None or not pending) and not leases:
        return recent
    window = Window.load(recent)
    if pending_at is not None and pending:
        window.starts.append((pending_at, pending))
        window.starts.sort()
    if not leases:
        return window.dump()
    try:
        held = json.loads(leases)
    except ValueError:
        return window.dump()  # a row written by hand: no lease rather than no claim
    return json.dumps(
        {"starts": [list(pair) for pair in window.starts], "leases": held}, separators=(",", ":")
    )
