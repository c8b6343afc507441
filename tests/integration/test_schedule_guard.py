"""django-q2 runs only the platform's timers: a schedule pointed at any other function (or
given a hook, keyword arguments, another timer's name) is refused by the schedules' admin,
and django-q2 about to queue one queues a task that only fails, saying why."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client
from django_q.models import Schedule

from jobs.schedule_guard import REFUSED, schedule_refusal
from jobs.schedules import RUN_TIMER

pytestmark = pytest.mark.django_db

ADD = "/admin/django_q/schedule/add/"
SHELL = "subprocess.getoutput"


def _scheduler_admin() -> Client:
    """Staff who may view, add and change schedules: and nothing else."""
    user = User.objects.create_user("planner", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_q",
            codename__in=["view_schedule", "add_schedule", "change_schedule"],
        )
    )
    client = Client()
    client.force_login(user)
    return client


def _form(**fields: object) -> dict[str, object]:
    return {
        "name": "mine",
        "func": RUN_TIMER,
        "args": "('sweep',)",
        "kwargs": "",
        "hook": "",
        "schedule_type": Schedule.MINUTES,
        "minutes": 5,
        "repeats": -1,
        "next_run_0": "2030-01-01",
        "next_run_1": "00:00:00",
        "cron": "",
        "cluster": "",
        "intended_date_kwarg": "",
        **fields,
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"func": SHELL, "args": "'touch /tmp/owned'"},
        {"func": "os.system", "args": "'id'"},
        {"hook": SHELL},
        {"kwargs": "q_options={'hook': 'subprocess.getoutput'}"},
        {"args": "('no such timer',)"},
        {"args": "('sweep', 'extra')"},
        {"intended_date_kwarg": "slot"},
    ],
    ids=["shell", "os.system", "hook", "q_options", "unknown-timer", "extra-argument", "date-kwarg"],
)
def test_schedule_admin__refuses_a_schedule_that_is_not_a_timer(fields: dict[str, object]) -> None:
    response = _scheduler_admin().post(ADD, _form(**fields))

    assert response.status_code == 200  # the form again, with the reason
    assert "errornote" in response.text or "errorlist" in response.text
    assert not Schedule.objects.filter(name="mine").exists()


def test_schedule_admin__saves_a_schedule_of_a_declared_timer() -> None:
    response = _scheduler_admin().post(ADD, _form())

    assert response.status_code == 302
    assert Schedule.objects.get(name="mine").func == RUN_TIMER


def test_schedule_admin__an_installed_schedules_call_is_read_only_but_it_can_be_stopped() -> None:
    call_command("install_schedules", stdout=StringIO())
    schedule = Schedule.objects.get(name="timer: sweep")
    client = _scheduler_admin()
    url = f"/admin/django_q/schedule/{schedule.pk}/change/"

    page = client.get(url).text
    response = client.post(url, _form(name="x", func=SHELL, args="'id'", hook=SHELL, minutes=1, repeats=0))

    assert 'name="func"' not in page and 'name="args"' not in page and 'name="hook"' not in page
    assert 'name="repeats"' in page
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.name, schedule.func, schedule.args, schedule.hook) == (
        "timer: sweep",
        RUN_TIMER,
        "('sweep',)",
        None,
    )
    assert (schedule.minutes, schedule.repeats) == (5, 0)


def test_schedule_admin__an_edited_schedule_outside_the_admin_cannot_be_saved_as_it_is() -> None:
    """A schedule of another function (written before, or by other means) is shown with its
    reason and cannot be saved until it names a timer."""
    schedule = Schedule.objects.create(name="legacy", func=SHELL, args="'id'", schedule_type=Schedule.HOURLY)

    response = _scheduler_admin().post(
        f"/admin/django_q/schedule/{schedule.pk}/change/", _form(name="legacy", func=SHELL, args="'id'")
    )

    assert response.status_code == 200 and "is not one of the platform" in response.text


def test_scheduler__queues_a_refused_task_for_a_schedule_that_is_not_a_timer(monkeypatch, tmp_path) -> None:
    """The scheduler django-q2 runs in ``qcluster`` (here in-process, its tasks left in the
    ORM broker): a schedule of another function, or a timer's with a hook, is queued as a
    task that only fails with the reason; the timers' schedules beside it are queued as they
    are (``tests/acceptance/test_qcluster_guard.py`` runs them in a real cluster)."""
    from django_q import scheduler
    from django_q.models import OrmQ

    call_command("install_schedules", stdout=StringIO())
    Schedule.objects.exclude(name="timer: trial_sweep").delete()
    Schedule.objects.create(
        name="owned",
        func=SHELL,
        args=repr(f"touch {tmp_path / 'owned'}"),
        schedule_type=Schedule.MINUTES,
        minutes=1,
    )
    Schedule.objects.create(
        name="hooked",
        func=RUN_TIMER,
        args="('trial_sweep',)",
        kwargs="q_options={'hook': 'subprocess.getoutput'}",
        schedule_type=Schedule.MINUTES,
        minutes=1,
    )

    # The scheduler closes old connections first, the test's transaction with them.
    monkeypatch.setattr(scheduler, "close_old_django_connections", lambda: None)
    scheduler.scheduler()

    queued = {task.task["group"]: task.task for task in OrmQ.objects.all()}
    assert set(queued) == {"owned", "hooked", "timer: trial_sweep"}
    assert (queued["owned"]["func"], queued["owned"]["kwargs"]) == (REFUSED, {})
    assert "'subprocess.getoutput' is not one of the platform's timers" in queued["owned"]["args"][0]
    assert queued["hooked"]["func"] == REFUSED and "hook" not in queued["hooked"]
    assert (queued["timer: trial_sweep"]["func"], queued["timer: trial_sweep"]["args"]) == (
        RUN_TIMER,
        ("trial_sweep",),
    )


def test_guard__a_function_the_project_allows_passes(settings) -> None:
    settings.JOBS_DJANGO_Q_ALLOWED_FUNCTIONS = ["math.floor"]

    assert schedule_refusal("math.floor", "1.5", None, None, None) == ""
    assert schedule_refusal("math.ceil", "1.5", None, None, None) != ""
    assert schedule_refusal(RUN_TIMER, "'sweep'", None, None, None) == ""
    assert (
        schedule_refusal(RUN_TIMER, "('sweep'", None, None, None) == "The arguments are not a Python literal."
    )
