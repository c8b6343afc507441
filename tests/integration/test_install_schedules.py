"""django-q2 as the timers' scheduler: ``install_schedules`` writes one Schedule per timer,
and django-q2 running that schedule runs the timer."""

from __future__ import annotations

import ast
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command
from django_q.models import Schedule, Success

from jobs.schedules import RUN_TIMER
from jobs.timers import timers
from tests.workspaces.factories import OrganizationFactory

pytestmark = pytest.mark.django_db


def test_install_schedules__one_schedule_per_timer_and_idempotent():
    first, second = StringIO(), StringIO()
    call_command("install_schedules", stdout=first)
    call_command("install_schedules", stdout=second)

    assert "created:" in first.getvalue()
    assert "created" not in second.getvalue() and "unchanged:" in second.getvalue()
    schedules = {s.name: s for s in Schedule.objects.all()}
    assert set(schedules) == {f"timer: {name}" for name in timers()}
    expected_minutes = {"sweep": 5, "reconcile": 15, "trial_sweep": 60}
    for timer, minutes in expected_minutes.items():
        schedule = schedules[f"timer: {timer}"]
        assert schedule.func == RUN_TIMER
        assert ast.literal_eval(schedule.args) == (timer,)
        assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == (Schedule.MINUTES, minutes, -1)


def test_install_schedules__repairs_an_edited_schedule_and_removes_an_unknown_timer():
    call_command("install_schedules", stdout=StringIO())
    Schedule.objects.filter(name="timer: reconcile").update(minutes=1)
    Schedule.objects.create(
        name="timer: retired", func=RUN_TIMER, args="('retired',)", schedule_type=Schedule.MINUTES, minutes=5
    )
    Schedule.objects.create(
        name="someone else's", func="math.floor", args="1.5", schedule_type=Schedule.HOURLY
    )
    out = StringIO()

    call_command("install_schedules", stdout=out)

    assert "updated: reconcile" in out.getvalue() and "removed: retired" in out.getvalue()
    assert Schedule.objects.get(name="timer: reconcile").minutes == 15
    assert not Schedule.objects.filter(name="timer: retired").exists()
    assert Schedule.objects.filter(name="someone else's").exists()


def test_scheduled_timer__run_by_the_django_q_scheduler_runs_the_timer(monkeypatch):
    from django_q import scheduler
    from django_q.conf import Conf

    OrganizationFactory(ending_soon=True)
    call_command("install_schedules", stdout=StringIO())
    Schedule.objects.exclude(name="timer: trial_sweep").delete()
    # Run the task in-process the way the cluster would run it, without a cluster.
    monkeypatch.setattr(Conf, "SYNC", True)

    scheduler.scheduler()

    assert len(mail.outbox) == 1
    task = Success.objects.get()
    assert task.func == RUN_TIMER
    assert task.result == {"workspaces.tasks.remind_trials_ending": "1 trial reminders sent"}
    assert Schedule.objects.get().next_run > task.started
