"""Which of a timer's slots are due at a moment, and what its catch-up policy makes of
them. Pure: the booking (``jobs.timetable.booking``) reads the timer's row, asks ``plan``,
and writes what it says.

A slot is **due** once its time has come and no slot at or after it has been booked yet.
The newest due slot is **on time** while it is at most ``grace`` seconds old (a worker
wakes at each slot, so in normal operation every slot is booked within milliseconds); an
interval timer's first slot, the one it was installed in, is on time too, while it is
still the newest. Every other due slot is **missed**: its time passed and no run of it was
enqueued (the fleet was down, or nothing was scheduling). The catch-up policy decides:

- ``skip``: none of them runs; the timer goes on with its next slot.
- ``once`` (the default): one run for all of them, keyed by the newest missed slot.
- ``all``: a run for each missed slot at most ``window`` seconds old (at most
  ``CATCH_UP_LIMIT``, the newest); older ones are counted as missed.

An on-time slot runs whatever the policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from jobs.timetable.calendar import ONE_MICROSECOND, Calendar

SCHEDULED = "scheduled"
CATCH_UP = "catch_up"
MANUAL = "manual"
#: At most this many runs for one catch-up under ``all``; older missed slots are counted.
CATCH_UP_LIMIT = 1_000
#: Missed slots of a cron timer are counted one by one, up to this many.
COUNT_LIMIT = 10_000


@dataclass(frozen=True)
class Run:
    slot: datetime
    kind: str  # SCHEDULED or CATCH_UP
    covers: int = 1  # the slots this run stands for (a catch-up under "once": all missed)


@dataclass(frozen=True)
class Missed:
    """Slots that get no run: recorded as one row, keyed by the newest of them."""

    slot: datetime
    count: int


@dataclass(frozen=True)
class Plan:
    runs: tuple[Run, ...] = ()
    missed: Missed | None = None
    last_slot: datetime | None = None  # the newest slot booked once this plan is written

    @property
    def empty(self) -> bool:
        return not self.runs and self.missed is None


def history_start(calendar: Calendar, installed_at: datetime) -> datetime:
    """Slots after this moment belong to the timer: an interval timer's start with the slot
    it was installed in, a cron timer's with its first time after installation."""
    if calendar.every is not None:
        first = calendar.latest_at_or_before(installed_at)
        if first is not None:
            return first - ONE_MICROSECOND
    return installed_at


def plan(
    calendar: Calendar,
    *,
    catch_up: str,
    installed_at: datetime,
    last_slot: datetime | None,
    now: datetime,
    grace: float,
    window: float,
) -> Plan:
    newest = calendar.latest_at_or_before(now)
    start = history_start(calendar, installed_at)
    lower = max(last_slot, start) if last_slot is not None else start
    if newest is None or newest <= lower:
        return Plan(last_slot=last_slot)
    due = calendar.count_between(lower, newest, COUNT_LIMIT)
    first_slot = last_slot is None and calendar.every is not None and newest - ONE_MICROSECOND == start
    on_time = (now - newest).total_seconds() <= grace or first_slot
    missed_count = due - 1 if on_time else due
    current = (Run(newest, SCHEDULED),) if on_time else ()
    upper = newest - ONE_MICROSECOND if on_time else newest  # the newest missed slot, or earlier
    if missed_count == 0:
        return Plan(runs=current, last_slot=newest)
    if catch_up == "skip":
        (latest_missed,) = calendar.newest_between(lower, upper, 1)
        return Plan(runs=current, missed=Missed(latest_missed, missed_count), last_slot=newest)
    if catch_up == "once":
        (latest_missed,) = calendar.newest_between(lower, upper, 1)
        return Plan(runs=(Run(latest_missed, CATCH_UP, missed_count), *current), last_slot=newest)
    # "all": every missed slot within the window, oldest first; the rest are counted.
    listed = calendar.newest_between(lower, upper, CATCH_UP_LIMIT + 1)
    oldest_allowed = now - timedelta(seconds=window)
    kept = [slot for slot in listed[:CATCH_UP_LIMIT] if slot >= oldest_allowed]
    runs = tuple(Run(slot, CATCH_UP) for slot in reversed(kept))
    dropped = missed_count - len(kept)
    missed = None
    if dropped > 0:
        older = calendar.newest_between(lower, kept[-1] - ONE_MICROSECOND, 1) if kept else listed[:1]
        missed = Missed(older[0], dropped)
    return Plan(runs=(*runs, *current), missed=missed, last_slot=newest)
