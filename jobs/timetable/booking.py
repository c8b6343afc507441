"""Booking slots: the row (timer, slot) first, then the run's job, in one transaction.

``book_due`` is the scheduler's tick (every worker runs it, no leader): for each enabled
timer with due slots it locks the timer's row, asks the planner what is due, and writes
the plan: a row per run with its job, a row for missed slots, the newest slot booked. The
row lock is taken with SKIP LOCKED, so a worker never waits for another one booking the
same timer (that one books these slots); the unique (timer, slot) index is what keeps a
slot from running twice whatever else happens (a command, a clock gone back, a row lock
lost with its session). ``book_manual`` books a slot of its own (Run now, ``--force``).

Each transaction is short: it locks one timer row and inserts a few rows; the runs
themselves happen later, in the workers, holding no lock of the booking.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

import jobs
from jobs.conf import jobs_settings
from jobs.models import ACTIVE, Job, Timer, TimerSlot
from jobs.timetable import clock, declarations, planner
from jobs.timetable.calendar import Calendar
from jobs.timetable.declarations import slot_key, slot_text

UNFINISHED = (TimerSlot.Outcome.ENQUEUED, TimerSlot.Outcome.RUNNING)


@dataclass(frozen=True)
class Booked:
    timer: str
    slot: datetime
    kind: str
    outcome: str
    job_id: int | None = None


def calendar_of(timer: Timer) -> Calendar:
    """The calendar in force: the row's (an operator may have changed the interval)."""
    return Calendar(every=timer.every, cron=timer.cron, timezone=timer.timezone)


def book_due(now: datetime | None = None) -> list[Booked]:
    """Book every due slot of every enabled timer this process declares."""
    now = now or clock.now()
    booked: list[Booked] = []
    for timer in Timer.objects.filter(enabled=True, declared=True):
        spec = declarations.find(timer.name)
        if spec is None or _plan(timer, now).empty:
            continue  # not declared in this process (an older release), or nothing due
        booked += _book(timer.pk, now)
    return booked


def next_due(now: datetime | None = None) -> datetime | None:
    """When the next slot of any enabled timer falls: when the scheduler wakes next."""
    now = now or clock.now()
    coming = [
        slot
        for timer in Timer.objects.filter(enabled=True, declared=True)
        if declarations.find(timer.name) is not None
        and (slot := calendar_of(timer).next_after(max(now, timer.last_slot or now))) is not None
    ]
    return min(coming, default=None)


def _plan(timer: Timer, now: datetime) -> planner.Plan:
    return planner.plan(
        calendar_of(timer),
        catch_up=timer.catch_up,
        installed_at=timer.installed_at,
        last_slot=timer.last_slot,
        now=now,
        grace=jobs_settings.SCHEDULE_GRACE,
        window=jobs_settings.SCHEDULE_CATCH_UP_WINDOW,
    )


def _book(timer_id: int, now: datetime) -> list[Booked]:
    with transaction.atomic():
        # The timer's row, until this booking commits; another worker booking it now has
        # it locked, and this one leaves the timer to it.
        timer = Timer.objects.select_for_update(skip_locked=True).filter(pk=timer_id, enabled=True).first()
        if timer is None:
            return []
        plan = _plan(timer, now)  # again, under the lock: another worker may have booked since
        if plan.empty:
            return []
        overlapping = timer.overlap == "skip" and bool(plan.runs) and still_running(timer)
        booked = []
        for run in plan.runs:
            if overlapping:
                booked.append(
                    _record(timer, run.slot, run.kind, TimerSlot.Outcome.SKIPPED, covers=run.covers)
                )
                timer.skipped += run.covers
            else:
                booked.append(_enqueue(timer, run.slot, run.kind, covers=run.covers))
                timer.missed += run.covers - 1
        if plan.missed is not None:
            booked.append(
                _record(timer, plan.missed.slot, "", TimerSlot.Outcome.MISSED, covers=plan.missed.count)
            )
            timer.missed += plan.missed.count
        timer.last_slot = plan.last_slot
        timer.save(update_fields=["last_slot", "missed", "skipped"])
    return [entry for entry in booked if entry is not None]


def still_running(timer: Timer) -> bool:
    """Whether a run of ``timer`` booked earlier is still queued or running: its slot row
    says it has not ended (``jobs_timer_slot_outcome``) and its job says so too (a job the
    reaper failed, or an operator cancelled, ends the run without writing its row)."""
    return TimerSlot.objects.filter(timer=timer, outcome__in=UNFINISHED, job__status__in=ACTIVE).exists()


def _fit(column: str, text: str) -> str:
    """``text`` cut to what the slot's ``column`` holds (the model says how much)."""
    return text[: TimerSlot._meta.get_field(column).max_length]  # type: ignore[union-attr]


def _record(timer: Timer, slot: datetime, kind: str, outcome: str, covers: int = 1) -> Booked | None:
    """A slot's row; None when the slot is already booked (by a command, say)."""
    try:
        with transaction.atomic():  # a savepoint: a slot taken already leaves the rest as it was
            TimerSlot.objects.create(
                timer=timer, slot=slot, kind=kind or TimerSlot.Kind.SCHEDULED, outcome=outcome, covers=covers
            )
    except IntegrityError:
        return None
    return Booked(timer.name, slot, kind or TimerSlot.Kind.SCHEDULED, outcome)


def _enqueue(timer: Timer, slot: datetime, kind: str, *, covers: int = 1, by: str = "") -> Booked | None:
    """A slot's row and its run's job, or None when the slot is already booked."""
    try:
        with transaction.atomic():
            row = TimerSlot.objects.create(
                timer=timer, slot=slot, kind=kind, covers=covers, by=_fit("by", by)
            )
    except IntegrityError:
        return None
    job = jobs.enqueue(
        declarations.job_type_name(timer.name),
        {"timer": timer.name, "slot": slot_text(slot), "kind": kind},
        dedupe_key=slot_key(timer.name, slot),
    )
    row.job = job
    row.save(update_fields=["job"])
    return Booked(timer.name, slot, kind, TimerSlot.Outcome.ENQUEUED, job.pk)


def book_manual(name: str, *, by: str = "", now: datetime | None = None) -> Booked:
    """A run of ``name`` now, as a slot of its own (the moment it was asked for, to the
    microsecond), whatever the schedule and pause say: the next scheduled slot still runs,
    once. KeyError for a timer that is not installed."""
    moment = now or clock.now()
    with transaction.atomic():
        timer = Timer.objects.select_for_update().get(name=name)  # the one row, for this insert
        for _ in range(3):  # the same microsecond as another slot: take the next one
            booked = _enqueue(timer, moment, TimerSlot.Kind.MANUAL, by=by)
            if booked is not None:
                return booked
            moment = moment.replace(microsecond=(moment.microsecond + 1) % 1_000_000)
    raise IntegrityError(f"Could not book a manual slot of the timer {name!r}.")


def reserve(timer: Timer, slot: datetime, *, kind: str, ran_in: str) -> TimerSlot | None:
    """A command's slot: its row, marked running here; None when the slot was booked
    already (by a worker, another cron host, an earlier run)."""
    if TimerSlot.objects.filter(timer=timer, slot=slot).exists():
        return None  # the common case, answered without waiting for a lock
    with transaction.atomic():
        locked = Timer.objects.select_for_update().get(pk=timer.pk)  # the one row, for this insert
        try:
            with transaction.atomic():
                row = TimerSlot.objects.create(
                    timer=locked,
                    slot=slot,
                    kind=kind,
                    outcome=TimerSlot.Outcome.RUNNING,
                    started_at=timezone.now(),
                    ran_in=_fit("ran_in", ran_in),
                )
        except IntegrityError:
            return None
        if kind == TimerSlot.Kind.SCHEDULED and (locked.last_slot is None or slot > locked.last_slot):
            locked.last_slot = slot
            locked.save(update_fields=["last_slot"])
    return row


def restart_from(timer: Timer, now: datetime | None = None) -> None:
    """After a pause or a change of schedule: slots up to now are neither due nor missed;
    the timer goes on with its next slot."""
    timer.last_slot = calendar_of(timer).latest_at_or_before(now or clock.now())


def active_run(timer: Timer) -> Job | None:
    """The job of a run of ``timer`` that is queued or running, if any."""
    row = (
        TimerSlot.objects.filter(timer=timer, outcome__in=UNFINISHED, job__status__in=ACTIVE)
        .select_related("job")
        .order_by("-slot")
        .first()
    )
    return row.job if row else None


def prune(older_than: timedelta) -> int:
    """Delete slot rows booked longer ago than ``older_than``, in batches; the timers' own
    rows keep their newest and last successful slot, which is all the booking needs."""
    cutoff = timezone.now() - older_than
    total = 0
    while True:
        # Each batch is its own short statement pair, along the primary key.
        ids = list(
            TimerSlot.objects.filter(created_at__lt=cutoff).order_by("id").values_list("id", flat=True)[:5000]
        )
        if not ids:
            return total
        total += TimerSlot.objects.filter(id__in=ids).delete()[0]
