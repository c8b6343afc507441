"""The declared timers as rows: created at ``migrate`` (like permissions) and again when a
worker starts (a release may add a timer without a migration), updated to what the code
declares, and marked undeclared at ``migrate`` when the code no longer has them (their
history stays).

What an operator changed stays: the interval, while the code still declares the one it
declared before, and the pause. A change of schedule in the code starts the timer afresh
from now (the slots of the old schedule are not missed).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from jobs.models import Timer
from jobs.timetable import booking, clock, declarations
from jobs.timetable.declarations import TimerSpec


@dataclass(frozen=True)
class Installed:
    created: list[str]
    updated: list[str]
    undeclared: list[str]


def install(now: datetime | None = None, *, mark_gone: bool = True) -> Installed:
    """``mark_gone=False`` (a worker starting) leaves the timers this process does not
    declare as they are: during a rolling deploy an older release may start a worker."""
    now = now or clock.now()
    created, updated = [], []
    names = declarations.declared()
    for name in names:
        outcome = _install_one(declarations.spec(name), now)
        if outcome == "created":
            created.append(name)
        elif outcome == "updated":
            updated.append(name)
    gone = []
    if mark_gone:
        gone = list(
            Timer.objects.filter(declared=True).exclude(name__in=names).values_list("name", flat=True)
        )
        Timer.objects.filter(name__in=gone).update(declared=False)
    return Installed(created, updated, sorted(gone))


def _install_one(spec: TimerSpec, now: datetime) -> str:
    calendar = spec.calendar
    declared = {
        "cron": calendar.cron,
        "timezone": calendar.timezone,
        "catch_up": spec.catch_up,
        "overlap": spec.overlap,
        "declared": True,
    }
    for _ in range(2):  # a worker starting at the same moment may create it first
        with transaction.atomic():
            timer = Timer.objects.select_for_update().filter(name=spec.name).first()  # its row, until saved
            if timer is None:
                try:
                    with transaction.atomic():
                        Timer.objects.create(
                            name=spec.name,
                            every=calendar.every,
                            declared_every=calendar.every,
                            enabled=not spec.paused,
                            installed_at=now,
                            **declared,
                        )
                except IntegrityError:
                    continue
                return "created"
            before = booking.calendar_of(timer)
            changed = [key for key, value in declared.items() if getattr(timer, key) != value]
            if timer.declared_every != calendar.every:
                if timer.every == timer.declared_every or calendar.cron:  # the operator kept the declared one
                    timer.every = calendar.every
                timer.declared_every = calendar.every
                changed += ["every", "declared_every"]
            if not changed:
                return "unchanged"
            for key, value in declared.items():
                setattr(timer, key, value)
            if booking.calendar_of(timer) != before:
                booking.restart_from(timer, now)
                changed.append("last_slot")
            timer.save(update_fields=sorted(set(changed)))
            return "updated"
    raise IntegrityError(f"Could not install the timer {spec.name!r}.")
