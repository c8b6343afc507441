"""Timers run by real ``runworker`` processes that book the slots themselves: every slot of
a one-second timer exactly once under three workers, SIGKILLs of whole worker groups and
commands running the same timer at the same moment (through PgBouncer on PostgreSQL); a
fleet stopped for five intervals catching up by each policy; a cron timer across the
daylight-saving changes of Berlin, with the workers' schedule clock put just before each
(``JOBS_SCHEDULE_CLOCK_OFFSET``, read by the schedules alone).

The timers are the test app's (``tests/jobs_app/tasks.py``), installed paused; each test
resumes the ones it uses. Every step writes a ``SlotRun`` row with its slot.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from jobs.models import ACTIVE, Job, JobAttempt, Timer, TimerSlot
from jobs.timetable import schedule
from jobs.timetable.calendar import Calendar
from tests.jobs_app.models import SlotRun
from tests.support import pgbouncer
from tests.support.database import database_url, on_mariadb
from tests.support.paths import ROOT
from tests.support.waiting import wait_for
from tests.support.workers import WorkerProcess, wait_registered, worker_environment

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SCHEDULING = {"JOBS_SCHEDULER": "true", "JOBS_POLL_INTERVAL": "0.2"}
EVERY_SECOND = "test.every_second"


def slot_runs(timer: str) -> list[datetime]:
    return sorted(SlotRun.objects.filter(timer=timer).values_list("slot", flat=True))


def rows(timer: str) -> list[TimerSlot]:
    return list(TimerSlot.objects.filter(timer__name=timer).order_by("slot"))


def resume(*names: str) -> None:
    for name in names:
        schedule.resume(name)


def pause(*names: str) -> None:
    for name in names:
        schedule.pause(name)


def runs_finished(timer: str) -> bool:
    return not Job.objects.filter(type=f"timer.{timer}", status__in=ACTIVE).exists()


# --- every slot exactly once across a fleet --------------------------------------------------


@pytest.fixture
def fleet_database() -> Iterator[dict[str, str]]:
    """Where the fleet and the commands connect: through a PgBouncer in transaction mode
    on PostgreSQL (LISTEN straight to PostgreSQL), straight to MariaDB."""
    if on_mariadb() or pgbouncer.executable() is None:
        yield {}
        return
    with pgbouncer.PgBouncer(pool_size=6) as bouncer:
        yield {
            "DATABASE_URL": bouncer.url(connection.settings_dict["NAME"]),
            "JOBS_DATABASE_POOL_MODE": "transaction",
            "JOBS_LISTEN_DATABASE_URL": database_url(),
        }


def run_timer_command(env: dict[str, str]) -> subprocess.Popen:
    """``manage.py run_timer test.every_second``, as cron would start it."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "run_timer", EVERY_SECOND],
        cwd=ROOT,
        env={**worker_environment(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


# A one-second timer kept in step with the wall clock while workers are killed and started
# for 30 s: on a 2-core machine another pytest worker's tests make it miss its pace.
@pytest.mark.serial
def test_three_workers_kills_and_commands__every_slot_of_a_one_second_timer_runs_exactly_once(
    start_worker: Callable[..., WorkerProcess], fleet_database: dict[str, str]
):
    env = {**SCHEDULING, **fleet_database}
    workers = {
        f"timer-{seat}": start_worker("--concurrency", "2", "--name", f"timer-{seat}", env=env)
        for seat in "abc"
    }
    wait_registered(*workers)
    resume(EVERY_SECOND)
    wait_for(lambda: len(slot_runs(EVERY_SECOND)) >= 2, timeout=60, message="the first runs")

    kills, commands, ran_in_a_command = 0, [], False
    window = time.monotonic() + 30  # 30 one-second slots at least
    give_up = time.monotonic() + 600  # only a bound: on a loaded machine each turn takes longer
    turn = 0
    while time.monotonic() < window or kills < 5 or not ran_in_a_command:
        assert time.monotonic() < give_up, f"{kills} kills in 10 minutes; the commands said {commands}"
        turn += 1
        if turn % 2:  # a whole worker group killed, mid-run when one is running the timer
            victim = _worker_running(EVERY_SECOND, set(workers)) or sorted(workers)[turn % 3]
            workers.pop(victim).kill_all()
            kills += 1
            name = f"{victim.split('~')[0]}~{turn}"  # its name stays taken until the lease ends
            workers[name] = start_worker("--concurrency", "2", "--name", name, env=env)
        elif not ran_in_a_command:  # two cron hosts at the same moment
            pair = [run_timer_command(fleet_database), run_timer_command(fleet_database)]
            outputs = [process.communicate(timeout=60)[0] for process in pair]
            assert all(process.returncode == 0 for process in pair), outputs
            commands += outputs
            ran_in_a_command = any("tests.jobs_app.tasks.every_second: ran " in output for output in outputs)
        done = len(slot_runs(EVERY_SECOND))
        wait_for(lambda: len(slot_runs(EVERY_SECOND)) >= done + 2, timeout=60, message="two more slots")  # noqa: B023
    pause(EVERY_SECOND)
    wait_for(lambda: runs_finished(EVERY_SECOND), timeout=120, message="the booked runs to finish")

    booked = rows(EVERY_SECOND)
    ran = slot_runs(EVERY_SECOND)
    first, last = booked[0].slot, booked[-1].slot
    every_slot = [first + timedelta(seconds=n) for n in range(int((last - first).total_seconds()) + 1)]
    assert [row.slot for row in booked] == every_slot, "a slot of the window was never booked"
    assert ran == every_slot, "each slot ran once: " + str(
        {slot: count for slot, count in Counter(ran).items() if count != 1}
    )
    assert {row.outcome for row in booked} == {TimerSlot.Outcome.SUCCEEDED}
    assert len(every_slot) >= 30
    assert kills >= 5 and ran_in_a_command, commands
    assert any(row.ran_in.startswith("manage.py run_timer") and row.job_id is None for row in booked)
    # Kills landed while a run ran: those tries were lost and their retries ran the slot once.
    assert JobAttempt.objects.filter(type=f"timer.{EVERY_SECOND}", error_class="WorkerLost").exists() or (
        JobAttempt.objects.filter(type=f"timer.{EVERY_SECOND}", error_class="WorkerCrashed").exists()
    ), "no kill landed mid-run"


def _worker_running(timer: str, among: set[str]) -> str | None:
    """The worker (of ``among``) running one of ``timer``'s runs, waited for a moment."""
    found: list[str] = []

    def running() -> bool:
        holders = Job.objects.filter(type=f"timer.{timer}", status="running").values_list(
            "locked_by", flat=True
        )
        found[:] = [name for name in holders if name in among]
        return bool(found)

    try:
        wait_for(running, timeout=2, interval=0.02)
    except AssertionError:
        return None
    return found[0]


# --- catching up after downtime ----------------------------------------------------------------

POLICIES = {"skip": "test.catch_up_skip", "once": "test.catch_up_once", "all": "test.catch_up_all"}


# One-second timers waited for on time after a stop of five intervals: beside another
# pytest worker's tests the restarted worker misses their first slots.
@pytest.mark.serial
def test_fleet_stopped_for_five_intervals__catches_up_by_each_timers_policy(start_worker):
    timers = list(POLICIES.values())
    resume(*timers)
    worker = start_worker("--concurrency", "2", env=SCHEDULING)
    wait_for(lambda: all(len(slot_runs(name)) >= 2 for name in timers), timeout=60, message="runs on time")
    worker.stop()
    stopped = {name: Timer.objects.get(name=name).last_slot for name in timers}
    newest = max(stopped.values())
    # The newest due slot is on time when a worker comes back (JOBS_SCHEDULE_GRACE), so five
    # missed slots need six to have passed before the restarted worker first looks.
    wait_for(lambda: datetime.now(UTC) >= newest + timedelta(seconds=6.2), timeout=10, message="6 intervals")

    start_worker("--concurrency", "2", env=SCHEDULING)
    first_after = {}

    def each_ran_on_time_again() -> bool:
        for name in timers:
            later = [
                row
                for row in rows(name)
                if row.slot > stopped[name]
                and row.kind == "scheduled"
                and row.outcome != TimerSlot.Outcome.MISSED
            ]
            if not later or later[0].outcome != TimerSlot.Outcome.SUCCEEDED:
                return False
            first_after[name] = later[0].slot
        return True

    wait_for(each_ran_on_time_again, timeout=60, message="each timer's first slot after the restart")
    pause(*timers)
    wait_for(lambda: all(runs_finished(name) for name in timers), timeout=60, message="catch-up runs to end")

    def missed(name: str) -> list[datetime]:
        return Calendar(every=1).newest_between(stopped[name], first_after[name] - timedelta(seconds=1), 100)[
            ::-1
        ]

    def between(name: str) -> list[TimerSlot]:
        """The rows of the slots the fleet was down for (the load of a busy machine may
        make a worker miss a slot before or after, too)."""
        return [row for row in rows(name) if stopped[name] < row.slot < first_after[name]]

    skip, once, every = POLICIES["skip"], POLICIES["once"], POLICIES["all"]
    assert all(len(missed(name)) >= 5 for name in timers), {name: missed(name) for name in timers}
    # skip: none of the missed slots ran; one row says how many were missed.
    assert [slot for slot in slot_runs(skip) if stopped[skip] < slot < first_after[skip]] == []
    (gap,) = [row for row in between(skip) if row.outcome == TimerSlot.Outcome.MISSED]
    assert (gap.slot, gap.covers) == (missed(skip)[-1], len(missed(skip)))
    # once: one catch-up run, keyed by the newest missed slot, standing for all of them.
    (catch_up,) = [row for row in between(once) if row.kind == "catch_up"]
    assert (catch_up.slot, catch_up.covers, catch_up.outcome) == (
        missed(once)[-1],
        len(missed(once)),
        "succeeded",
    )
    assert [slot for slot in slot_runs(once) if stopped[once] < slot < first_after[once]] == [
        missed(once)[-1]
    ]
    # all: every missed slot ran, once.
    assert [slot for slot in slot_runs(every) if stopped[every] < slot < first_after[every]] == missed(every)
    assert {row.kind for row in between(every)} == {"catch_up"}


# --- across a daylight-saving change -------------------------------------------------------------

DAILY, TICKS = "test.dst_daily", "test.dst_ticks"  # at 02:00 in Berlin; every two seconds


def _run_with_clock_at(start_worker, moment: datetime, until: Callable[[], bool]) -> None:
    """One worker whose schedule clock reads ``moment`` as it starts, until ``until()``
    and every run it booked has ended; the timers start afresh at ``moment`` (no slot
    before it is due)."""
    for timer in Timer.objects.filter(name__in=(DAILY, TICKS)):
        last = Calendar(cron=timer.cron, timezone=timer.timezone).latest_at_or_before(moment)
        Timer.objects.filter(pk=timer.pk).update(enabled=True, last_slot=last)
    offset = (moment - datetime.now(UTC)).total_seconds()
    worker = start_worker("--concurrency", "2", env={**SCHEDULING, "JOBS_SCHEDULE_CLOCK_OFFSET": str(offset)})
    wait_for(until, timeout=60, message=f"the timers' runs after {moment}")
    pause(DAILY, TICKS)
    wait_for(lambda: runs_finished(DAILY) and runs_finished(TICKS), timeout=30, message="the runs to end")
    worker.stop()


LEAD = timedelta(seconds=6)  # each worker's clock starts this long before the change


def ticks_around(change: datetime) -> list[datetime]:
    """The two-second ticks from the worker's start to as long after the change."""
    return [change + timedelta(seconds=n) for n in range(-4, 7, 2)]


def ticks_ran_around(change: datetime) -> Callable[[], bool]:
    return lambda: set(ticks_around(change)) <= set(slot_runs(TICKS))


# Each worker's clock starts 6 s before a change: a worker slower to start than that (beside
# another pytest worker's tests) misses the first ticks it waits for.
@pytest.mark.serial
def test_cron_timer_across_daylight_saving_changes__runs_each_wall_clock_slot_once(start_worker):
    # Spring, 28 March 2027: 02:00 does not exist in Berlin; the daily run is at 03:00 CEST.
    jump = datetime(2027, 3, 28, 1, 0, tzinfo=UTC)
    _run_with_clock_at(start_worker, jump - LEAD, lambda: bool(slot_runs(DAILY)) and ticks_ran_around(jump)())
    # Autumn, 31 October 2027: 02:00 CEST comes, then at 03:00 the clocks go back to 02:00 CET.
    first_two = datetime(2027, 10, 31, 0, 0, tzinfo=UTC)
    _run_with_clock_at(start_worker, first_two - LEAD, lambda: len(slot_runs(DAILY)) == 2)
    back = datetime(2027, 10, 31, 1, 0, tzinfo=UTC)  # 02:00 CET, the second 02:00 of the night
    _run_with_clock_at(start_worker, back - LEAD, ticks_ran_around(back))

    assert slot_runs(DAILY) == [jump, first_two], "02:00 ran at the jump in spring and once in autumn"
    assert not TimerSlot.objects.filter(timer__name=DAILY, slot=back).exists()
    ticks = slot_runs(TICKS)
    assert len(ticks) == len(set(ticks)), "a tick ran twice"
    for change in (jump, back):  # across each change the ticks go on every two seconds
        assert [slot for slot in ticks if change - LEAD < slot <= change + LEAD] == ticks_around(change)
