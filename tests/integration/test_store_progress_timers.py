"""A handler's progress reaching the job row (the latest report at most once per interval,
never dropped), and timers guarded by a lock (PostgreSQL's advisory lock, MariaDB's named
lock) so two runs at the same moment never do the same work."""

from __future__ import annotations

import functools
import multiprocessing
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from jobs import store, timers
from jobs.context import JobContext
from jobs.drivers import mariadb
from jobs.models import Job
from jobs.worker.guard import DatabaseGuard
from jobs.worker.progress import ProgressSlot, ProgressWriter
from tests.support.database import on_mariadb, raw_connection
from tests.support.job_states import claim_one, make_silent
from tests.support.timer_locks import advisory_key, release_step_lock, take_step_lock

pytestmark = pytest.mark.django_db


def _progress(job_id: int) -> tuple[int | None, str]:
    return Job.objects.values_list("progress", "progress_message").get(pk=job_id)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeChild:
    """What the writer reads of a child process: its slot, in shared memory as in a worker."""

    progress: ProgressSlot = field(default_factory=lambda: ProgressSlot(multiprocessing.get_context()))
    progress_written: int = 0


def _running(worker: str = "w1") -> tuple[store.ClaimedJob, JobContext, FakeChild]:
    store.enqueue("test.progress", {})
    claimed = claim_one(worker, "test.progress")
    child = FakeChild()
    ctx = JobContext(
        job_id=claimed.id,
        type_name=claimed.type,
        attempt=claimed.attempt,
        max_attempts=claimed.max_attempts,
        worker=worker,
        report=functools.partial(child.progress.put, claimed.id, claimed.attempt),
    )
    return claimed, ctx, child


def test_progress__the_latest_report_reaches_the_row_when_the_interval_ends():
    claimed, ctx, child = _running()
    clock = FakeClock()
    writer = ProgressWriter("w1", DatabaseGuard(60.0), interval=0.5, clock=clock)

    ctx.progress(12.7, "step 1 of 5")
    writer.write_due([child])
    assert _progress(claimed.id) == (12, "step 1 of 5")

    ctx.progress(40, "step 2 of 5")  # within the interval: kept, not yet written
    ctx.progress(60, "step 3 of 5")  # replaces it; then the handler reports nothing more
    clock.now += 0.2
    writer.write_due([child])
    assert _progress(claimed.id) == (12, "step 1 of 5")
    clock.now += 0.3  # the interval has passed
    writer.write_due([child])
    assert _progress(claimed.id) == (60, "step 3 of 5")


def test_progress__a_jobs_last_report_is_written_when_it_ends_and_nothing_is_written_twice():
    claimed, ctx, child = _running()
    writes: list[tuple[object, ...]] = []

    def write(*args: object) -> bool:
        writes.append(args)
        return store.set_progress(*args)  # type: ignore[arg-type]

    writer = ProgressWriter("w1", DatabaseGuard(60.0), interval=3600, write=write, clock=FakeClock())
    ctx.progress(10, "first")
    writer.write_due([child])
    ctx.progress(250, "done")  # clamped to 100
    writer.write(child)  # the job ended
    writer.write(child)
    writer.write_due([child])

    assert _progress(claimed.id) == (100, "done")
    assert [args[3:] for args in writes] == [(10, "first"), (100, "done")]


def test_progress__a_message_postgresql_cannot_store_is_made_storable():
    claimed, ctx, child = _running()
    ctx.progress(50, "half\x00way \ud800 there " + "x" * 600)

    ProgressWriter("w1", DatabaseGuard(60.0), interval=0.5).write(child)

    percent, message = _progress(claimed.id)
    assert percent == 50 and message.startswith("halfway ? there x") and len(message) == 500


def test_progress__refreshes_the_heartbeat_and_is_fenced():
    store.enqueue("test.progress", {})
    claimed = claim_one("w1", "test.progress")
    assert store.set_progress("w1", claimed.id, claimed.attempt, 30, "x" * 600) is True
    job = Job.objects.get(pk=claimed.id)
    assert (job.progress, len(job.progress_message)) == (30, 500)
    assert store.set_progress("w2", claimed.id, claimed.attempt, 40, "not mine") is False
    assert _progress(claimed.id)[0] == 30


# --- timers ---------------------------------------------------------------------------------

calls: list[str] = []
lock_holders: list[int] = []
# Advisory locks in this test database (pg_locks shows the whole server's).
_OUR_ADVISORY_LOCKS = (
    "locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def _count_step() -> str:
    calls.append("count")
    return "counted"


def _broken_step() -> str:
    raise RuntimeError("step broke")


def _lock_holders_step() -> str:
    """Records which sessions hold this step's lock while it runs, and its own."""
    with connection.cursor() as cursor:
        lock_holders.extend(_step_lock_holders(cursor, f"{__name__}._lock_holders_step"))
        cursor.execute("SELECT CONNECTION_ID()" if on_mariadb() else "SELECT pg_backend_pid()")
        lock_holders.append(-cursor.fetchone()[0])  # its own session, negated
    return "looked"


@pytest.fixture
def test_timer() -> Iterator[str]:
    """A timer of two steps for these tests only; removed afterwards."""
    calls.clear()
    timers.periodic("test.timer", every=60)(_broken_step)
    timers.periodic("test.timer", every=30)(_count_step)
    yield "test.timer"
    timers.forget("test.timer")


def _step_lock_holders(cursor, step_name: str) -> list[int]:
    """The sessions (ids) holding the step's lock."""
    if on_mariadb():
        cursor.execute(mariadb.TIMER_STEP_LOCK_HOLDER, [zlib.crc32(step_name.encode())])
        return [row[0] for row in cursor.fetchall() if row[0] is not None]
    cursor.execute(
        f"SELECT pid FROM pg_locks WHERE {_OUR_ADVISORY_LOCKS} AND objid = %s AND granted",
        [advisory_key(step_name)],
    )
    return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_run_steps__runs_no_step_while_another_session_holds_one_and_every_step_after(
    test_timer: str, other_connection
):
    """Runs of one timer never overlap, and none runs only some of its steps."""
    step = f"{__name__}._count_step"
    assert take_step_lock(other_connection, step)

    assert timers.run_steps(test_timer) is None
    assert timers.run_steps(test_timer, wait=0.3) is None  # waited, and it was still held
    assert calls == []

    release_step_lock(other_connection, step)
    results = timers.run_steps(test_timer)
    assert results is not None and results[step].text == "counted"
    assert calls == ["count"]


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_run_steps__releases_its_locks_so_another_session_can_run_next(test_timer: str, other_connection):
    timers.run_steps(test_timer)
    assert take_step_lock(other_connection, f"{__name__}._count_step")


@pytest.mark.django_db(transaction=True)
def test_run_steps__a_step_locked_in_another_database_of_the_server_still_runs(test_timer: str):
    """A step's lock belongs to its database (PostgreSQL's advisory locks are per database;
    MariaDB's named locks are the server's, so the name carries the database): staging's
    sweep on the same server does not make production's skip its steps."""
    step = f"{__name__}._count_step"
    elsewhere = raw_connection()
    try:
        if on_mariadb():
            elsewhere.execute("USE mysql")
            assert take_step_lock(elsewhere, step)
        else:
            elsewhere.close()
            params = {**connection.get_connection_params(), "dbname": "postgres"}
            for name in ("cursor_factory", "context", "prepare_threshold"):
                params.pop(name, None)
            elsewhere = psycopg.connect(**params, autocommit=True)
            assert take_step_lock(elsewhere, step)
        results = timers.run_steps(test_timer)
        assert results is not None and results[step].text == "counted"
    finally:
        elsewhere.close()


def test_run_steps__a_failing_step_does_not_stop_the_others(test_timer: str):
    results = timers.run_steps(test_timer)
    assert results is not None
    assert results[f"{__name__}._broken_step"].text == "failed: step broke"
    assert results[f"{__name__}._broken_step"].error == "RuntimeError: step broke"
    assert results[f"{__name__}._count_step"].text == "counted"
    assert timers.interval(test_timer) == 30


def test_run_timer__unknown_timer_is_refused():
    with pytest.raises(KeyError, match="Unknown timer 'nope'"):
        timers.run_timer("nope")


def test_sweep_command__runs_the_reaper_and_pruning():
    store.enqueue("test.noop", {})
    silent = claim_one("w1")
    make_silent(silent.id, 3600)
    out = StringIO()
    call_command("sweep", stdout=out)
    assert "jobs.tasks.reap_silent_jobs: 1 requeued, 0 failed" in out.getvalue()
    assert Job.objects.get(pk=silent.id).message == "Requeued after a worker restart."
    assert "jobs.tasks.prune_finished_jobs: 0 pruned" in out.getvalue()


@pytest.mark.django_db(transaction=True)  # the lock's session must see the step's database
def test_run_steps__the_step_lock_lives_on_a_session_of_its_own_and_ends_with_the_step(other_connection):
    """Behind a transaction pooler the step's own connection may run each statement in
    another server session: a lock taken there would stay behind, so the lock is held by a
    session of its own while the step runs, and is gone when it returns."""
    lock_holders.clear()
    step = f"{__name__}._lock_holders_step"
    timers.periodic("test.locks", every=60)(_lock_holders_step)
    try:
        assert timers.run_steps("test.locks") == {step: timers.StepResult("looked")}
    finally:
        timers.forget("test.locks")
    *holders, own = lock_holders
    assert len(holders) == 1, "one session, and only one, held the step's lock while it ran"
    assert holders[0] != -own, "the step's own session held its lock"
    with connection.cursor() as cursor:
        assert _step_lock_holders(cursor, step) == []
    if not on_mariadb():  # and no advisory lock at all is left in this database
        left = other_connection.execute(
            f"SELECT count(*) FROM pg_locks WHERE {_OUR_ADVISORY_LOCKS}"
        ).fetchone()[0]
        assert left == 0
