"""A timer run's body, as a worker's job (``run_slot``, the handler of every ``timer.*``
type) and as a command's run (``jobs.timetable.outside``), and what either writes at its
end: the slot's outcome and each step's line, and the timer's last successful slot (what
the missed-run warning reads). A job's start is its job's; a command's, its slot's row.

A run holds every step's lock for the whole run (``jobs.timers.run_steps``). When another
run of the timer holds one (the previous slot's run, a cron run of ``manage.py sweep``), a
worker's run goes back to the queue for a moment (``RetryLater``, no attempt used) and a
command's waits: runs of one timer never overlap, and every booked slot runs all of its
steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Coalesce, Greatest, Now

from jobs import timers
from jobs.context import JobContext
from jobs.errors import PermanentError, RetryLater, TimerStepFailed
from jobs.models import Timer, TimerSlot
from jobs.timetable import declarations
from jobs.timetable.declarations import TimerSpec, parse_slot

#: How long a run that waits for another run of its timer waits between looks: a tenth of
#: the timer's period, within these bounds (seconds).
WAIT_SHORTEST, WAIT_LONGEST = 0.2, 60.0
#: How long a command waits for another run of its timer to finish: its period, within these.
COMMAND_WAIT_SHORTEST, COMMAND_WAIT_LONGEST = 5.0, 300.0
#: The steps' lines kept on a slot's row.
RESULT_CHARS = 10_000


def declare(spec: TimerSpec) -> None:
    declarations.declare_job_type(spec, run_slot)


def declare_all() -> None:
    """Every declared timer's job type (the app's ``ready``, after the tasks modules)."""
    for name in declarations.declared():
        declare(declarations.spec(name))


def run_slot(ctx: JobContext, *, timer: str, slot: str, kind: str = "scheduled") -> None:
    """The job of one booked slot: every step of ``timer``, for ``slot``."""
    spec = declarations.find(timer)
    if spec is None:
        raise PermanentError(f"Timer {timer!r} is no longer declared; its slot {slot} cannot run.")
    moment = parse_slot(slot)
    results = timers.run_steps(timer, moment.astimezone(spec.calendar.zone))
    if results is None:
        raise RetryLater(
            f"Waiting for another run of the timer {timer!r} to finish its steps.", delay=_wait(spec)
        )
    failed = ended(timer, moment, results)
    if failed:
        raise TimerStepFailed("; ".join(failed))


def ended(timer: str, slot: datetime, results: Mapping[str, timers.StepResult]) -> list[str]:
    """Write the run's end on its slot (and, when every step succeeded, on its timer);
    returns the failed steps' lines.

    The slot's row is written last thing in an atomic run's transaction, so its lock lives
    for the commit only. The timer's row is written once that transaction has committed:
    a command booking a slot locks the timer's row and then inserts the slot's, and a run
    that held a slot's row while waiting for the timer's would wait for it in a circle."""
    failed = [f"{name} failed: {result.error}" for name, result in results.items() if result.error]
    lines = "\n".join(f"{name}: {result.text}" for name, result in results.items())
    outcome = TimerSlot.Outcome.FAILED if failed else TimerSlot.Outcome.SUCCEEDED
    TimerSlot.objects.filter(timer__name=timer, slot=slot).update(
        outcome=outcome, finished_at=Now(), result=lines[:RESULT_CHARS]
    )
    if not failed:
        transaction.on_commit(
            lambda: Timer.objects.filter(name=timer).update(
                last_success_slot=Greatest(Coalesce("last_success_slot", Value(slot)), Value(slot)),
                last_success_at=Now(),
            )
        )
    return failed


def _wait(spec: TimerSpec) -> float:
    period = spec.calendar.every or 60
    return min(WAIT_LONGEST, max(WAIT_SHORTEST, period / 10))


def command_wait(spec: TimerSpec) -> float:
    """How long a command waits for another run of its timer (its period, 5 s to 5 min)."""
    period = spec.calendar.every or 300
    return min(COMMAND_WAIT_LONGEST, max(COMMAND_WAIT_SHORTEST, float(period)))
