"""django-q2 as the timers' scheduler: one ``Schedule`` per timer, calling ``run_timer``.

The same timers cron would run (``manage.py sweep`` …), so switching schedulers changes no
behaviour; each call runs the timer's nearest slot through the slot's row, so django-q2,
cron and the workers' own booking together still run a slot once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from jobs.timers import timers
from jobs.timetable import declarations

RUN_TIMER = "jobs.timers.run_timer"


def _minutes(timer: str) -> int:
    """An interval timer every N minutes; a cron timer every minute, each call running its
    nearest slot once (django-q2 reads cron in its own zone, the timer in its own)."""
    every = declarations.spec(timer).calendar.every
    return max(1, round(every / 60)) if every is not None else 1


def schedule_name(timer: str) -> str:
    return f"timer: {timer}"


@dataclass(frozen=True)
class Installed:
    created: list[str]
    updated: list[str]
    unchanged: list[str]
    removed: list[str]


def install_schedules() -> Installed:
    """Create or update a Schedule per registered timer; remove ones for timers gone since.

    Idempotent: a second run finds every schedule as wanted and changes nothing (an
    existing schedule keeps its ``next_run``).
    """
    from django_q.models import Schedule

    created, updated, unchanged = [], [], []
    wanted = {schedule_name(timer): timer for timer in timers()}
    with transaction.atomic():
        for name, timer in sorted(wanted.items()):
            fields = {
                "func": RUN_TIMER,
                "args": repr((timer,)),
                "kwargs": None,
                "schedule_type": Schedule.MINUTES,
                "minutes": _minutes(timer),
                "repeats": -1,
            }
            schedule = Schedule.objects.select_for_update().filter(name=name).first()
            if schedule is None:
                Schedule.objects.create(name=name, **fields)
                created.append(timer)
            elif any(getattr(schedule, key) != value for key, value in fields.items()):
                for key, value in fields.items():
                    setattr(schedule, key, value)
                schedule.save()
                updated.append(timer)
            else:
                unchanged.append(timer)
        stale = Schedule.objects.filter(func=RUN_TIMER, name__startswith=schedule_name("")).exclude(
            name__in=wanted
        )
        removed = sorted(
            name.removeprefix(schedule_name("")) for name in stale.values_list("name", flat=True)
        )
        stale.delete()
    return Installed(created, updated, unchanged, removed)
