"""When a timer's slots fall. Pure: no database, no clock.

Two kinds of calendar:

- **every N seconds**: the slots are the multiples of N seconds since the Unix epoch, in
  UTC, so every process computes the same ones without talking to another: ``every=300``
  falls on :00, :05, :10 …, ``every=3600`` on the hour. A time zone changes nothing.
- **cron**: a cron expression (five fields, or six with seconds first) read in a time zone
  by cronsim, which follows Debian's cron, daylight-saving changes included: a job at a
  given hour whose time is skipped when the clocks go forward runs right after the jump,
  and one whose time comes twice when they go back runs the first time only; a job that
  runs more often than hourly keeps its pace in real time.

Slots are aware datetimes in UTC, whatever zone a cron calendar reads its expression in
(``jobs.next_slots`` shows them in the timer's zone): two datetimes of one zone compare by
their wall-clock times, so across a change of the clocks only UTC orders them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MICROSECOND = timedelta(microseconds=1)
MAX_CRON_LENGTH = 100
# Walking back through a cron calendar: windows that double from a minute to a year, and
# no further back than cronsim looks ahead (50 years).
_FIRST_WINDOW = timedelta(seconds=64)
_WIDEST_WINDOW = timedelta(days=366)
_HORIZON = timedelta(days=50 * 366)
_UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


@dataclass(frozen=True)
class Calendar:
    every: int | None = None  # seconds
    cron: str = ""
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        if (self.every is None) == (not self.cron):
            raise ValueError("a timer takes either every= (seconds) or cron= (an expression), not both")
        if self.every is not None and (
            isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1
        ):
            raise ValueError(f"every= must be a whole number of seconds, at least 1; got {self.every!r}")
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            raise ValueError(
                f"unknown time zone {self.timezone!r} (an IANA name such as Europe/Berlin)"
            ) from None
        if self.cron:
            if len(self.cron) > MAX_CRON_LENGTH:
                raise ValueError(f"cron expression longer than {MAX_CRON_LENGTH} characters")
            try:
                CronSim(self.cron, datetime(2000, 1, 1, tzinfo=zone))
            except CronSimError as exc:
                raise ValueError(f"cron expression {self.cron!r}: {exc}") from None

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    # --- the slots ----------------------------------------------------------------------

    def after(self, moment: datetime, count: int = 1) -> list[datetime]:
        """The next ``count`` slots strictly after ``moment``."""
        slots = []
        for slot in self._forward(moment.astimezone(UTC)):
            slots.append(slot)
            if len(slots) >= count:
                break
        return slots

    def next_after(self, moment: datetime) -> datetime | None:
        found = self.after(moment, 1)
        return found[0] if found else None

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        """The slot now due at ``moment``: the newest one not after it."""
        return next(self._backward(moment.astimezone(UTC) + ONE_MICROSECOND), None)

    def newest_between(self, lower: datetime, upper: datetime, limit: int) -> list[datetime]:
        """Up to ``limit`` slots in (``lower``, ``upper``], newest first."""
        found: list[datetime] = []
        if limit <= 0:
            return found
        for slot in self._backward(upper.astimezone(UTC) + ONE_MICROSECOND):
            if slot <= lower:
                break
            found.append(slot)
            if len(found) >= limit:
                break
        return found

    def count_between(self, lower: datetime, upper: datetime, cap: int) -> int:
        """How many slots fall in (``lower``, ``upper``], at most ``cap`` (exact for an
        interval, counted one by one for cron)."""
        if self.every is not None:
            return min(cap, max(0, self._index_at_or_before(upper) - self._index_at_or_before(lower)))
        return len(self.newest_between(lower, upper, cap))

    def nearest(self, moment: datetime, early: float) -> datetime | None:
        """The slot a command started at ``moment`` stands for: the coming one when it is at
        most ``early`` seconds (and half a period) away, else the one now due. Cron and
        EventBridge start a little early or late; neither doubles nor drops a slot."""
        moment = moment.astimezone(UTC)
        due = self.latest_at_or_before(moment)
        coming = self.next_after(moment)
        if coming is None:
            return due
        period = (coming - due).total_seconds() if due is not None else float("inf")
        if (coming - moment).total_seconds() <= min(early, period / 2) or due is None:
            return coming
        return due

    # --- words --------------------------------------------------------------------------

    def describe(self) -> str:
        """``every 5 minutes``; ``At 07:00 on Monday through Friday (Europe/Berlin)``."""
        if self.every is not None:
            return "every " + describe_seconds(self.every)
        text = CronSim(self.cron, datetime(2000, 1, 1, tzinfo=self.zone)).explain()
        return f"{text} ({self.timezone})"

    # --- how ----------------------------------------------------------------------------

    def _forward(self, moment: datetime) -> Iterator[datetime]:
        if self.every is not None:
            index = self._index_at_or_before(moment) + 1
            while True:
                yield self._slot(index)
                index += 1
        # Started inside an hour that the clocks repeat, cronsim first names the times of
        # that hour's first pass, which are behind us: the slots are only those after.
        # Compared in UTC: two aware datetimes of one zone compare by their wall-clock
        # times, and 02:00 of the second pass would come before 02:30 of the first.
        latest = moment.astimezone(UTC)
        for local in CronSim(self.cron, moment.astimezone(self.zone)):
            slot = local.astimezone(UTC)
            if slot > latest:
                latest = slot
                yield slot

    def _backward(self, before: datetime) -> Iterator[datetime]:
        """Slots strictly before ``before``, newest first."""
        if self.every is not None:
            index = self._index_at_or_before(before - ONE_MICROSECOND)
            while index >= 0:
                yield self._slot(index)
                index -= 1
            return
        # cronsim's reverse iteration does not name the same slots as its forward one
        # around a daylight-saving change (it may return the second 02:30 of a night whose
        # forward run had only the first): walk back in windows, each read forwards.
        end = before.astimezone(UTC) - ONE_MICROSECOND
        width = _FIRST_WINDOW
        while end > before - _HORIZON:
            start = end - width
            window = []
            for slot in self._forward(start):
                if slot > end:
                    break
                window.append(slot)
            yield from reversed(window)
            end, width = start, min(width * 2, _WIDEST_WINDOW)

    def _index_at_or_before(self, moment: datetime) -> int:
        assert self.every is not None
        elapsed = moment - EPOCH
        microseconds = (elapsed.days * 86400 + elapsed.seconds) * 1_000_000 + elapsed.microseconds
        return microseconds // (self.every * 1_000_000)

    def _slot(self, index: int) -> datetime:
        assert self.every is not None
        return EPOCH + timedelta(seconds=index * self.every)


def describe_seconds(seconds: int) -> str:
    """``5 minutes``, ``hour``, ``90 seconds``: the largest unit that divides it."""
    for size, unit in _UNITS:
        if seconds % size == 0:
            amount = seconds // size
            return unit if amount == 1 else f"{amount} {unit}s"
    return f"{seconds} seconds"


def in_utc(slot: datetime) -> datetime:
    return slot.astimezone(UTC)
