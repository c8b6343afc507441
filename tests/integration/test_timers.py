"""Timers as schedules in the database, on the real database without worker processes:
the rows installed from the declarations, booking due slots once however often and by
whomever asked, the overlap policy, a run's body and what it records, ``manage.py sweep``
through the same row, pause, resume and run now, and the missed-run warning wherever it
is reported. Real workers: tests/acceptance/test_timers_fleet.py; the page in Chromium:
tests/browser/test_timers_page.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import LogEntry
from django.core.checks import run_checks
from django.core.management import call_command
from django.test import Client

import jobs
from jobs import checks, registry, timers
from jobs.errors import RetryLater, TimerStepFailed
from jobs.models import ACTIVE, Job, Priority, Status, Timer, TimerSlot
from jobs.timetable import booking, health, install, runs, schedule
from jobs.timetable.declarations import slot_key, slot_text
from tests.admin_jobs import make_user
from tests.jobs_app.models import SlotRun
from tests.support.concurrency import run_at_once
from tests.support.timer_locks import release_step_lock, take_step_lock

pytestmark = pytest.mark.django_db

T0 = datetime(2027, 1, 5, 12, 0, 0, tzinfo=UTC)  # a moment after the timers were installed
ONCE = "test.catch_up_once"  # every second, catch_up="once", overlap="skip", paused
QUEUED = "test.every_second"  # every second, overlap="queue", catch_up="all", paused


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


def book(name: str, now: datetime) -> list[booking.Booked]:
    """What a tick at ``now`` booked of ``name`` (the seed's timers, enabled, get theirs too)."""
    return [entry for entry in booking.book_due(now) if entry.timer == name]


def running(name: str, *, last_slot: datetime | None = T0, **fields: object) -> Timer:
    """The installed timer ``name``, resumed, with ``last_slot`` booked."""
    Timer.objects.filter(name=name).update(enabled=True, last_slot=last_slot, **fields)
    return Timer.objects.get(name=name)


# --- declarations and rows ---------------------------------------------------------------------


def test_install__every_declared_timer_is_a_row_with_its_schedule_and_policies():
    rows = {timer.name: timer for timer in Timer.objects.all()}  # installed at migrate

    assert {"sweep", "reconcile", "trial_sweep", ONCE, "test.dst_daily"} <= set(rows)
    assert [(rows[name].every, rows[name].enabled) for name in ("sweep", "reconcile", "trial_sweep")] == [
        (300, True),
        (900, True),
        (3600, True),
    ]
    assert (rows[QUEUED].overlap, rows[QUEUED].catch_up, rows[QUEUED].enabled) == ("queue", "all", False)
    daily = rows["test.dst_daily"]
    assert (daily.every, daily.cron, daily.timezone) == (None, "0 2 * * *", "Europe/Berlin")
    sweep = registry.get("timer.sweep")  # each timer's runs are a job type of their own
    assert (sweep.queue, sweep.priority, sweep.attempts) == ("default", "high", 3)


def test_install__keeps_the_operators_interval_and_pause_and_marks_a_timer_gone_from_the_code():
    schedule.set_interval("reconcile", 600)
    schedule.pause("reconcile")
    timers.periodic("test.passing", every=60)(_ok_step)
    install.install()
    timers.forget("test.passing")

    result = install.install()

    reconcile = Timer.objects.get(name="reconcile")
    assert (reconcile.every, reconcile.declared_every, reconcile.enabled) == (600, 900, False)
    assert result.undeclared == ["test.passing"]
    assert Timer.objects.get(name="test.passing").declared is False


def test_next_slots__what_the_interval_or_cron_and_time_zone_make_of_the_days_ahead():
    assert jobs.next_slots("sweep", after=datetime(2026, 12, 1, 15, 3, tzinfo=UTC), count=3) == [
        datetime(2026, 12, 1, 15, minute, tzinfo=UTC) for minute in (5, 10, 15)
    ]
    schedule.set_interval("sweep", 600)  # an operator's interval is the one in force
    assert jobs.next_slots("sweep", after=datetime(2026, 12, 1, 15, 3, tzinfo=UTC), count=2) == [
        datetime(2026, 12, 1, 15, 10, tzinfo=UTC),
        datetime(2026, 12, 1, 15, 20, tzinfo=UTC),
    ]
    spring = jobs.next_slots("test.dst_daily", after=datetime(2027, 3, 27, 12, tzinfo=UTC), count=2)
    assert [f"{slot:%m-%d %H:%M %Z}" for slot in spring] == ["03-28 03:00 CEST", "03-29 02:00 CEST"]
    assert spring[0].tzinfo == ZoneInfo("Europe/Berlin")
    with pytest.raises(KeyError, match="Unknown timer 'nope'"):
        jobs.next_slots("nope")
    with pytest.raises(ValueError, match="aware"):
        jobs.next_slots("sweep", after=datetime(2026, 12, 1))


# --- booking -----------------------------------------------------------------------------------


def test_book_due__one_row_and_one_job_per_slot_however_often_asked():
    running(ONCE)

    first = book(ONCE, seconds(1.2))
    again = book(ONCE, seconds(1.7))

    assert [(entry.slot, entry.kind) for entry in first] == [(seconds(1), "scheduled")]
    assert again == []
    job = Job.objects.get(pk=first[0].job_id)
    assert (job.type, job.queue, job.priority, job.status) == (
        "timer.test.catch_up_once",
        "default",
        Priority.HIGH,
        Status.QUEUED,
    )
    assert job.dedupe_key == slot_key(ONCE, seconds(1)) == "timer:test.catch_up_once@2027-01-05T12:00:01Z"
    assert job.payload == {"timer": ONCE, "slot": "2027-01-05T12:00:01Z", "kind": "scheduled"}
    assert TimerSlot.objects.filter(timer__name=ONCE).count() == 1
    assert Timer.objects.get(name=ONCE).last_slot == seconds(1)


@pytest.mark.django_db(transaction=True)  # each booking commits on a connection of its own
def test_book_due__workers_booking_at_the_same_moment_enqueue_each_slot_once():
    running(QUEUED)

    booked = run_at_once(*[lambda: book(QUEUED, seconds(3.5))] * 4)

    slots = sorted(entry.slot for batch in booked for entry in batch)
    assert slots == [seconds(1), seconds(2), seconds(3)]  # 1 and 2 caught up ("all"), 3 on time
    assert Job.objects.filter(type="timer.test.every_second").count() == 3


def test_book_due__a_slot_a_command_booked_first_is_not_booked_again():
    timer = running(QUEUED)
    assert booking.reserve(timer, seconds(2), kind="scheduled", ran_in="manage.py on host:1") is not None
    Timer.objects.filter(pk=timer.pk).update(last_slot=T0)  # as if that command had not said so

    booked = book(QUEUED, seconds(2.3))

    assert [entry.slot for entry in booked] == [seconds(1)]
    assert TimerSlot.objects.get(timer=timer, slot=seconds(2)).job is None  # the command's, not a job


def test_booking__cuts_who_asked_and_where_a_command_ran_to_what_their_columns_hold():
    timer = running(QUEUED)
    by, ran_in = "ops-" + "o" * 400, "manage.py sweep on " + "h" * 400

    manual = booking.book_manual(QUEUED, by=by)
    reserved = booking.reserve(timer, seconds(2), kind="scheduled", ran_in=ran_in)

    assert reserved is not None
    longest = {column: TimerSlot._meta.get_field(column).max_length for column in ("by", "ran_in")}
    assert TimerSlot.objects.get(timer=timer, slot=manual.slot).by == by[: longest["by"]]
    assert TimerSlot.objects.get(pk=reserved.pk).ran_in == ran_in[: longest["ran_in"]]


def test_book_due__overlap_skip_records_a_slot_whose_previous_run_still_runs_as_skipped():
    running(ONCE)
    (first,) = book(ONCE, seconds(1.1))

    (second,) = book(ONCE, seconds(2.1))

    assert (second.outcome, second.job_id) == (TimerSlot.Outcome.SKIPPED, None)
    assert Timer.objects.get(name=ONCE).skipped == 1
    Job.objects.filter(pk=first.job_id).update(status=Status.SUCCEEDED)  # the run ended
    (third,) = book(ONCE, seconds(3.1))
    assert third.outcome == TimerSlot.Outcome.ENQUEUED and third.job_id


def test_book_due__overlap_queue_enqueues_a_slot_whatever_still_runs():
    running(QUEUED)
    book(QUEUED, seconds(1.1))
    book(QUEUED, seconds(2.1))

    assert Job.objects.filter(type="timer.test.every_second", status__in=ACTIVE).count() == 2


def test_book_due__a_paused_timer_books_nothing_and_resumes_from_its_next_slot():
    running(ONCE)
    schedule.pause(ONCE)
    assert book(ONCE, seconds(5.5)) == []

    before = datetime.now(UTC)
    schedule.resume(ONCE)  # now, in real time: every slot up to now is behind it, none missed
    timer = Timer.objects.get(name=ONCE)

    assert timer.missed == 0 and timer.last_slot is not None
    assert before - timedelta(seconds=1) <= timer.last_slot <= datetime.now(UTC)


# --- a run's body -------------------------------------------------------------------------------

_ok_calls: list[str] = []


def _ok_step() -> str:
    _ok_calls.append("ok")
    return "fine"


def _broken_step() -> str:
    raise RuntimeError("step broke")


@pytest.fixture
def broken_timer() -> Iterator[str]:
    """A timer of two steps, the first of which fails."""
    _ok_calls.clear()
    timers.periodic("test.broken", every=60)(_broken_step)
    timers.periodic("test.broken", every=60)(_ok_step)
    install.install()
    yield "test.broken"
    timers.forget("test.broken")


def test_run_slot__a_failing_step_fails_the_try_after_the_other_steps_ran(broken_timer):
    booked = booking.book_manual(broken_timer, by="ops")

    with pytest.raises(TimerStepFailed, match="_broken_step failed: RuntimeError: step broke"):
        runs.run_slot(None, timer=broken_timer, slot=slot_text(booked.slot), kind="manual")

    assert _ok_calls == ["ok"]
    row = TimerSlot.objects.get(timer__name=broken_timer, slot=booked.slot)
    assert row.outcome == TimerSlot.Outcome.FAILED and row.finished_at is not None
    assert "_ok_step: fine" in row.result
    assert Timer.objects.get(name=broken_timer).last_success_slot is None


@pytest.mark.django_db(transaction=True)  # the other session must hold the lock for real
def test_run_slot__waits_for_another_run_holding_a_step_lock_instead_of_skipping_the_step(other_connection):
    booked = booking.book_manual(QUEUED)
    step = "tests.jobs_app.tasks.every_second"
    assert take_step_lock(other_connection, step)

    with pytest.raises(RetryLater, match="Waiting for another run of the timer 'test.every_second'"):
        runs.run_slot(None, timer=QUEUED, slot=slot_text(booked.slot))
    assert not SlotRun.objects.exists()

    release_step_lock(other_connection, step)
    runs.run_slot(None, timer=QUEUED, slot=slot_text(booked.slot))
    assert list(SlotRun.objects.values_list("slot", flat=True)) == [booked.slot]
    assert TimerSlot.objects.get(timer__name=QUEUED, slot=booked.slot).outcome == TimerSlot.Outcome.SUCCEEDED
    assert Timer.objects.get(name=QUEUED).last_success_slot == booked.slot


def test_run_slot__a_timer_no_longer_declared_fails_at_once():
    with pytest.raises(jobs.PermanentError, match="no longer declared"):
        runs.run_slot(None, timer="gone", slot="2027-01-05T12:00:00Z")


# --- outside schedulers --------------------------------------------------------------------------


@pytest.fixture
def mid_slot(settings) -> datetime:
    """The schedules' clock put two minutes into a five-minute slot of the sweep, so that a
    command's nearest slot is the one now due (not the coming one) however long it takes."""
    now = datetime.now(UTC)
    boundary = now.replace(minute=now.minute - now.minute % 5, second=0, microsecond=0) + timedelta(minutes=5)
    settings.JOBS_SCHEDULE_CLOCK_OFFSET = (boundary + timedelta(minutes=2) - now).total_seconds()
    return boundary


def _sweep(*args: str) -> str:
    out = StringIO()
    call_command("sweep", *args, stdout=out)
    return out.getvalue()


def test_sweep_command__runs_its_slot_once_says_so_the_second_time_and_runs_again_when_forced(mid_slot):
    first, second, forced = _sweep(), _sweep(), _sweep("--force")

    assert first.startswith("sweep: slot ") and "jobs.tasks.reap_silent_jobs: 0 requeued, 0 failed" in first
    assert "nothing to do (--force runs it again)" in second and "reap_silent_jobs" not in second
    assert "sweep: its own slot" in forced and "reap_silent_jobs" in forced
    rows = list(TimerSlot.objects.filter(timer__name="sweep").order_by("id"))
    assert [(row.kind, row.outcome) for row in rows] == [("scheduled", "succeeded"), ("manual", "succeeded")]
    assert rows[0].ran_in.startswith("manage.py sweep on ") and rows[0].slot == mid_slot
    assert rows[1].slot.microsecond != 0 or rows[1].slot.second != 0  # the moment it was asked for


def test_sweep_command__a_slot_a_worker_booked_is_not_run_again_by_cron(mid_slot):
    Timer.objects.filter(name="sweep").update(last_slot=mid_slot - timedelta(minutes=5))
    (booked,) = book("sweep", mid_slot + timedelta(minutes=2))

    said = _sweep()

    assert f"already has its run: job #{booked.job_id}, queued" in said
    assert TimerSlot.objects.filter(timer__name="sweep").count() == 1


def test_sweep_command__a_paused_timer_runs_only_when_forced():
    schedule.pause("sweep")

    assert "sweep is paused: nothing ran" in _sweep()
    assert "reap_silent_jobs" in _sweep("--force")


def test_install_schedules__a_cron_timer_is_asked_every_minute_for_its_nearest_slot():
    from django_q.models import Schedule

    call_command("install_schedules", stdout=StringIO())

    assert Schedule.objects.get(name="timer: test.dst_daily").minutes == 1
    assert Schedule.objects.get(name="timer: sweep").minutes == 5


# --- run now ------------------------------------------------------------------------------------


def test_run_timer_now__a_slot_of_its_own_while_the_next_scheduled_slot_still_runs_once():
    running(ONCE)
    job = jobs.run_timer_now(ONCE, by="ops")

    booked = book(ONCE, seconds(1.1))

    manual = TimerSlot.objects.get(job=job)
    assert (manual.kind, manual.by, job.type) == ("manual", "ops", "timer.test.catch_up_once")
    # overlap="skip": the manual run is still queued, so the slot is recorded as skipped,
    # not doubled and not lost.
    assert [(entry.slot, entry.outcome) for entry in booked] == [(seconds(1), "skipped")]


# --- the missed-run warning -----------------------------------------------------------------------


def test_health__overdue_once_two_slots_came_without_a_successful_run():
    now = datetime.now(UTC)
    timer = running(ONCE, installed_at=now - timedelta(seconds=10))

    assert [state.name for state in health.overdue(health.timer_states(now))] == [ONCE]
    (state,) = health.overdue(health.timer_states(now))
    assert "Timer 'test.catch_up_once' (every second) has missed its runs" in state.warning

    Timer.objects.filter(pk=timer.pk).update(
        last_success_slot=now.replace(microsecond=0) - timedelta(seconds=1)
    )
    assert health.overdue(health.timer_states(now)) == []  # only the slot now due has not run
    Timer.objects.filter(pk=timer.pk).update(last_success_slot=now - timedelta(seconds=3))
    assert health.overdue(health.timer_states(now)) != []
    schedule.pause(ONCE)
    assert health.overdue(health.timer_states(now)) == []  # paused: not missing anything


def test_missed_runs__on_the_jobs_page_in_the_check_and_in_both_metrics(admin_client: Client):
    running(ONCE, installed_at=datetime.now(UTC) - timedelta(seconds=30))

    page = admin_client.get("/admin/platform/job/").text
    messages = [
        message for message in run_checks(databases=["default"]) if message.id == checks.OVERDUE_TIMER
    ]
    scrape = _scrape(admin_client)
    data = health.metric_data(health.timer_states(), datetime.now(UTC))

    assert 'class="job-overdue-timer" data-timer="test.catch_up_once"' in page
    assert [message.obj for message in messages] == ["timer test.catch_up_once"]
    assert 'jobs_timer_overdue{timer="test.catch_up_once"} 1.0' in scrape
    assert 'jobs_timer_overdue{timer="sweep"} 0.0' in scrape
    assert {key: data[0][key] for key in ("MetricName", "Value")} == {
        "MetricName": "OverdueTimers",
        "Value": 1.0,
    }
    assert [
        entry["Value"] for entry in data if entry.get("Dimensions") == [{"Name": "Timer", "Value": ONCE}]
    ] == [1.0]


def _scrape(client: Client) -> str:
    from django.test import override_settings

    with override_settings(JOBS_METRICS_TOKEN="t" * 32):
        return client.get("/metrics", HTTP_AUTHORIZATION="Bearer " + "t" * 32).text


# --- the Timers page ------------------------------------------------------------------------------

PAGE = "/admin/platform/timer/"


def test_timers_page__a_viewer_sees_the_timers_without_buttons_and_cannot_press_one(client: Client):
    client.force_login(make_user("viewer", "view_jobs"))
    sweep = Timer.objects.get(name="sweep")

    page = client.get(PAGE)

    assert page.status_code == 200
    assert "every 5 minutes" in page.text and "At 02:00 every day (Europe/Berlin)" in page.text
    assert "timer-action--" not in page.text and "timer-row-action" not in page.text
    assert client.post(f"{PAGE}{sweep.pk}/pause/").status_code == 403
    assert client.post(f"{PAGE}{sweep.pk}/run/").status_code == 403
    assert Timer.objects.get(pk=sweep.pk).enabled and not TimerSlot.objects.exists()


def test_timers_page__an_operator_pauses_resumes_and_runs_now_each_written_to_the_admin_log(client: Client):
    operator = make_user("operator", "view_jobs", "change_timer")
    client.force_login(operator)
    sweep = Timer.objects.get(name="sweep")

    assert "timer-action--pause" in client.get(PAGE).text
    client.post(f"{PAGE}{sweep.pk}/pause/")
    assert Timer.objects.get(pk=sweep.pk).enabled is False
    client.post(f"{PAGE}{sweep.pk}/resume/")
    assert Timer.objects.get(pk=sweep.pk).enabled is True
    response = client.post(f"{PAGE}{sweep.pk}/run/", {"next": PAGE})

    assert response.status_code == 302 and response["Location"] == PAGE
    (manual,) = TimerSlot.objects.filter(timer=sweep)
    assert (manual.kind, manual.by, manual.job.type) == ("manual", "operator", "timer.sweep")
    logged = LogEntry.objects.filter(object_id=str(sweep.pk)).order_by("action_time")
    assert [entry.get_change_message() for entry in logged] == [
        "Paused",
        "Resumed",
        f"Run now (job #{manual.job.pk})",
    ]
    assert all(entry.user == operator for entry in logged)


def test_timers_page__the_interval_is_editable_for_an_interval_timer_only(client: Client):
    client.force_login(make_user("operator", "view_jobs", "change_timer"))
    sweep, daily = Timer.objects.get(name="sweep"), Timer.objects.get(name="test.dst_daily")

    saved = client.post(f"{PAGE}{sweep.pk}/change/", {"every": "120", "enabled": "on"})
    refused = client.post(f"{PAGE}{sweep.pk}/change/", {"every": "0", "enabled": "on"})

    assert saved.status_code == 302
    assert Timer.objects.get(pk=sweep.pk).every == 120
    assert refused.status_code == 200 and "An interval is a whole number of seconds" in refused.text
    assert LogEntry.objects.filter(object_id=str(sweep.pk)).count() == 1  # Django's "Changed every."
    assert 'name="every"' not in client.get(f"{PAGE}{daily.pk}/change/").text
    assert 'name="every"' in client.get(f"{PAGE}{sweep.pk}/change/").text
