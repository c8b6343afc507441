"""Outside schedulers: ``manage.py sweep`` (cron, EventBridge), django-q2's schedules.

A command runs the timer's nearest slot (``Calendar.nearest``: the one now due, or the
coming one when it starts a little early) here, in its own process, through the same row a
worker books: if the slot was booked already, by a worker, another cron host or an earlier
run, it says so and runs nothing. ``force`` runs a slot of its own anyway (as Run now
does). A paused timer runs only when forced. The run holds every step's lock:
while another run of the timer holds one, the command waits for it (up to the timer's
period, 5 s to 5 min) and then runs every step.
"""

from __future__ import annotations

import os
import socket
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from jobs import timers
from jobs.conf import jobs_settings
from jobs.models import Timer, TimerSlot
from jobs.timetable import booking, clock, declarations, install, runs
from jobs.timetable.declarations import slot_text


class RunBusy(RuntimeError):
    """Another run of the timer held its steps for as long as a command waits."""


@dataclass(frozen=True)
class CommandRun:
    timer: str
    slot: datetime | None
    ran: bool
    message: str  # one line: the slot, and why nothing ran when nothing did
    results: dict[str, object] = field(default_factory=dict)


def run_nearest_slot(name: str, *, force: bool = False, runner: str = "manage.py") -> CommandRun:
    """Run ``name``'s nearest slot here, once across everything that runs timers."""
    spec = declarations.find(name)
    if spec is None or name not in timers.timers():
        raise KeyError(
            f"Unknown timer {name!r}; known timers: {', '.join(declarations.declared()) or 'none'}."
        )
    timer = _installed(name)
    now = clock.now()
    ran_in = f"{runner} on {socket.gethostname()}:{os.getpid()}"
    if not timer.enabled and not force:
        message = f"{name} is paused: nothing ran (resume it on the Timers page, or run it with --force)."
        return CommandRun(name, None, False, message, {name: message})
    slot = booking.calendar_of(timer).nearest(now, early=jobs_settings.SCHEDULE_GRACE)
    row = booking.reserve(timer, slot, kind=TimerSlot.Kind.SCHEDULED, ran_in=ran_in) if slot else None
    if row is None and not force:
        message = (
            f"{name}: slot {_when(slot)} {_already(timer, slot)}; nothing to do (--force runs it again)."
        )
        return CommandRun(name, slot, False, message, {name: message})
    if row is None:
        slot = now
        row = None
        for _ in range(3):  # a slot of its own, the moment it was asked for
            row = booking.reserve(timer, slot, kind=TimerSlot.Kind.MANUAL, ran_in=ran_in)
            if row is not None:
                break
            slot = slot.replace(microsecond=(slot.microsecond + 1) % 1_000_000)
    assert slot is not None and row is not None
    local = slot.astimezone(spec.calendar.zone)
    with transaction.atomic() if spec.atomic else nullcontext():  # its writes with its end
        results = timers.run_steps(name, local, wait=runs.command_wait(spec))
        if results is None:
            waited = {
                name: timers.StepResult(
                    None, f"Busy: another run held its steps for {runs.command_wait(spec):g} s"
                )
            }
            runs.ended(name, slot, waited)
            raise RunBusy(f"{name}: slot {_when(slot)} did not run: another run of the timer held its steps.")
        runs.ended(name, slot, results)
    kind = "its own slot" if row.kind == TimerSlot.Kind.MANUAL else "slot"
    return CommandRun(
        name,
        slot,
        True,
        f"{name}: {kind} {_when(slot)}",
        {step: result.text for step, result in results.items()},
    )


def _installed(name: str) -> Timer:
    timer = Timer.objects.filter(name=name).first()
    if timer is None:
        install.install()
        timer = Timer.objects.get(name=name)
    return timer


def _when(slot: datetime | None) -> str:
    return slot_text(slot) if slot is not None else "—"


def _already(timer: Timer, slot: datetime | None) -> str:
    row = TimerSlot.objects.filter(timer=timer, slot=slot).select_related("job").first() if slot else None
    if row is None:
        return "was booked already"
    if row.job is not None:
        return f"already has its run: job #{row.job.pk}, {row.job.status}"
    if row.ran_in:
        return f"already ran ({row.outcome}, in {row.ran_in})"
    return f"was {row.outcome}"
