"""What ``runworker`` calls between claims: book the timers' due slots (``booking``).

The supervisor asks ``due`` on every turn of its loop and calls ``tick`` through its
database guard when it is; ``deadline`` tells it when to wake for the next slot, so a slot
is booked within milliseconds of its time. Between slots a tick is one small read of the
timers' rows, at most once per poll interval (and at least every few seconds), which is
also how a pause or a new interval set in the admin reaches every worker.
"""

from __future__ import annotations

import logging
import time

from jobs.timetable import booking, clock, install
from jobs.worker.guard import OUTAGE_ERRORS

logger = logging.getLogger("jobs.timers")

#: The longest a worker goes without looking at the timers' rows.
LOOK_AT_LEAST_EVERY = 5.0


class ScheduleTicker:
    def __init__(self, *, enabled: bool, poll_interval: float) -> None:
        self.enabled = enabled
        self.refresh = min(LOOK_AT_LEAST_EVERY, max(0.05, poll_interval))
        self.next_tick = 0.0  # monotonic
        self.installed = False

    def describe(self) -> str:
        return "books due timer slots" if self.enabled else "books no timer slots (--no-schedules)"

    def due(self, now: float) -> bool:
        return self.enabled and now >= self.next_tick

    def deadline(self) -> float | None:
        return self.next_tick if self.enabled else None

    def tick(self) -> int:
        """Book what is due; returns how many runs were enqueued. An outage raises (the
        supervisor's guard handles it); any other error is logged and tried again at the
        next look: a broken timer must not stop the worker from running jobs."""
        self.next_tick = time.monotonic() + self.refresh
        try:
            return self._tick()
        except OUTAGE_ERRORS:
            raise
        except Exception:
            logger.exception("Booking the timers' due slots failed; trying again in %.1fs.", self.refresh)
            return 0

    def _tick(self) -> int:
        if not self.installed:
            install.install(mark_gone=False)
            self.installed = True
        booked = booking.book_due()
        for entry in booked:
            logger.info(
                "timer %s: slot %s %s%s",
                entry.timer,
                f"{entry.slot:%Y-%m-%d %H:%M:%S}",
                entry.outcome,
                f" as job #{entry.job_id}" if entry.job_id else "",
            )
        started = time.monotonic()
        coming = booking.next_due()
        wait = self.refresh
        if coming is not None:
            wait = min(wait, max(0.0, (coming - clock.now()).total_seconds()))
        self.next_tick = started + wait
        return sum(1 for entry in booked if entry.job_id)
