"""What one may ask of and do to a timer: its next slots, pause, resume, run now, a new
interval. The public API (``jobs.next_slots``, ``jobs.pause_timer`` …) and the Timers page
both come here; nothing else changes a timer's row but the booking and the install.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from jobs.models import Job, Timer
from jobs.timetable import booking, clock, declarations, install
from jobs.timetable.calendar import Calendar


def calendar(name: str) -> Calendar:
    """The schedule in force: the installed row's, else the declaration's."""
    timer = Timer.objects.filter(name=name).first()
    if timer is not None:
        return booking.calendar_of(timer)
    spec = declarations.find(name)
    if spec is None:
        raise KeyError(
            f"Unknown timer {name!r}; known timers: {', '.join(declarations.declared()) or 'none'}."
        )
    return spec.calendar


def next_slots(name: str, *, after: datetime | None = None, count: int = 1) -> list[datetime]:
    if count < 1:
        raise ValueError("count must be at least 1")
    if after is not None and after.tzinfo is None:
        raise ValueError("after= needs an aware datetime")
    found = calendar(name)
    return [slot.astimezone(found.zone) for slot in found.after(after or clock.now(), count)]


def _timer(name: str) -> Timer:
    timer = Timer.objects.select_for_update().filter(name=name).first()  # the one row, until saved
    if timer is None:
        install.install()
        timer = Timer.objects.select_for_update().filter(name=name).first()
    if timer is None:
        raise KeyError(
            f"Unknown timer {name!r}; known timers: {', '.join(declarations.declared()) or 'none'}."
        )
    return timer


def pause(name: str) -> Timer:
    with transaction.atomic():
        timer = _timer(name)
        if timer.enabled:
            timer.enabled = False
            timer.save(update_fields=["enabled"])
    return timer


def resume(name: str) -> Timer:
    """From the next slot on: the slots that passed while paused are not missed."""
    with transaction.atomic():
        timer = _timer(name)
        if not timer.enabled:
            timer.enabled = True
            booking.restart_from(timer)
            timer.save(update_fields=["enabled", "last_slot"])
    return timer


def set_interval(name: str, every: int) -> Timer:
    """A new interval for an interval timer (the code's declaration stays as it was, and a
    later release that declares another one leaves this one in place); the timer goes on
    from its next slot under the new interval."""
    Calendar(every=every)  # refuses what is not a whole number of seconds ≥ 1
    with transaction.atomic():
        timer = _timer(name)
        if timer.cron:
            raise ValueError(f"Timer {name!r} runs on a cron expression; its code declares when.")
        if timer.every != every:
            timer.every = every
            booking.restart_from(timer)
            timer.save(update_fields=["every", "last_slot"])
    return timer


def run_now(name: str, *, by: str = "") -> Job:
    _timer_exists(name)
    booked = booking.book_manual(name, by=by)
    assert booked.job_id is not None  # a manual slot is always a run
    return Job.objects.get(pk=booked.job_id)


def _timer_exists(name: str) -> None:
    if not Timer.objects.filter(name=name).exists():
        with transaction.atomic():
            _timer(name)
