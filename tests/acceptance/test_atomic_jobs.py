"""Exactly-once database effects with real ``manage.py runworker`` processes: an atomic
job's writes commit with its completion, so a worker killed at any moment leaves them
applied once; a plain job's writes can apply twice. A late try refused by the fence, a
timeout and a shutdown cut-off all roll the writes back with the dying connection."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection, transaction

from jobs import store
from jobs.models import Job, JobAttempt, Status
from tests.jobs_app.models import Execution
from tests.support.job_states import make_silent, wait_finished, wait_status
from tests.support.waiting import wait_for
from tests.support.workers import wait_log, wait_registered

pytestmark = pytest.mark.django_db(transaction=True)


def _rows(job_id: int) -> list[int]:
    """The tries whose Execution row is committed, in the order they were written."""
    return list(Execution.objects.filter(job_id=job_id).order_by("id").values_list("attempt", flat=True))


def _held(marker: Path) -> dict:
    """What a held try wrote to its marker: its pid, its database session, its try."""
    # The job creates the file, then writes it: wait for the whole line, not the file.
    wait_for(
        lambda: marker.exists() and marker.read_text().endswith("}"),
        timeout=60,
        message="the held try's marker",
    )
    return json.loads(marker.read_text())


def _session(backend: int) -> tuple[str, bool] | None:
    """A database session's state and whether it holds a transaction that wrote; None once
    the session is gone. PostgreSQL's names for the states; on MariaDB the process list and
    InnoDB's open transactions say the same."""
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            cursor.execute(
                "SELECT p.COMMAND, t.trx_id IS NOT NULL, COALESCE(t.trx_rows_modified, 0) > 0"
                "  FROM information_schema.PROCESSLIST AS p"
                "  LEFT JOIN information_schema.INNODB_TRX AS t ON t.trx_mysql_thread_id = p.ID"
                " WHERE p.ID = %s",
                [backend],
            )
            found = cursor.fetchone()
            if found is None:
                return None
            command, in_transaction, wrote = found
            idle = "idle in transaction" if in_transaction else "idle"
            return (idle if command == "Sleep" else "active", bool(wrote))
        cursor.execute(
            "SELECT state, backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = %s", [backend]
        )
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1])


def _holds_open_transaction(backend: int) -> None:
    assert _session(backend) == ("idle in transaction", True)


def _wait_session_gone(backend: int) -> None:
    wait_for(lambda: _session(backend) is None, timeout=30, message=f"session {backend} to end")


@pytest.mark.parametrize(
    "type_name, tries_with_a_row",
    [("test.write", [1, 2]), ("test.write_atomic", [2])],
    ids=["plain-writes-twice", "atomic-writes-once"],
)
def test_worker_killed_after_the_handler_wrote__its_writes_apply_twice_unless_atomic(
    start_worker, tmp_path, type_name, tries_with_a_row
):
    """The try writes its row, then the whole worker is killed before the job is
    acknowledged, and the job runs again on another worker. The plain job's row was
    committed on its own and stays, so the rerun writes a second one; the atomic job's row
    was in the transaction that would also have completed the job, and died with it."""
    marker, gate = tmp_path / "held", tmp_path / "gate"
    victim = start_worker("--concurrency", "1", "--name", "victim")
    job = store.enqueue(type_name, {"marker": str(marker), "gate": str(gate), "hold_on": [1]})
    held = _held(marker)

    victim.kill_all()  # supervisor and child at once: the row is written, the job not acknowledged
    _wait_session_gone(held["backend"])
    start_worker("--concurrency", "1", "--name", "heir")

    done = wait_status(job.pk, Status.SUCCEEDED, timeout=60)
    assert (done.attempts, done.locked_by) == (2, "heir")
    assert _rows(job.pk) == tries_with_a_row


def test_workers_killed_again_and_again__every_atomic_jobs_row_exists_exactly_once(start_worker):
    """Three workers drain 2,000 atomic and 2,000 plain jobs (each inserts one row) while
    whole workers are killed with SIGKILL nine times and replaced. Every atomic job's row
    exists exactly once. Plain jobs lose nothing either, but whether a kill landed between
    one's commit and its acknowledgement is chance: ``python -m bench.throughput --only
    kill`` counts their duplicates (the test above makes one for certain)."""
    quiet = {"LOG_LEVEL": "WARNING"}  # one log line per job would slow the run down
    names = [f"fleet-{number}" for number in range(3)]
    workers = [start_worker("--concurrency", "2", "--name", name, env=quiet) for name in names]
    with transaction.atomic():  # interleaved, so every kill finds both kinds running
        for _ in range(20):
            store.enqueue_many("test.write_atomic", [{"sleep": 0.002} for _ in range(100)])
            store.enqueue_many("test.write", [{"sleep": 0.002} for _ in range(100)])
    atomic = list(Job.objects.filter(type="test.write_atomic").values_list("pk", flat=True))
    plain = list(Job.objects.filter(type="test.write").values_list("pk", flat=True))
    total, kills = len(atomic) + len(plain), 9

    for kill in range(kills):
        done_before_kill = total * (kill + 1) // (kills + 2)
        wait_for(
            lambda at_least=done_before_kill: Job.objects.filter(status=Status.SUCCEEDED).count() >= at_least,
            timeout=180,
            interval=0.02,
            message=f"{done_before_kill} jobs done before kill {kill + 1}",
        )
        slot = kill % len(workers)
        if kill == 0:
            # The first kill takes atomic jobs mid-run, however the machine's load spreads the
            # work: otherwise this run could prove nothing (the last assertion).
            wait_for(
                lambda victim=names[slot]: Job.objects.filter(
                    type="test.write_atomic", status=Status.RUNNING, locked_by=victim
                ).exists(),
                timeout=60,
                interval=0.005,
                message=f"{names[slot]} to hold atomic jobs",
            )
        workers[slot].kill_all()
        names[slot] = f"fleet-{len(workers) + kill}"  # the fleet replaces the task
        workers[slot] = start_worker("--concurrency", "2", "--name", names[slot], env=quiet)
    wait_finished([*atomic, *plain], timeout=300)

    assert Job.objects.filter(status=Status.SUCCEEDED).count() == total
    per_atomic_job = Counter(Execution.objects.filter(job_id__in=atomic).values_list("job_id", flat=True))
    assert per_atomic_job == dict.fromkeys(atomic, 1)
    per_plain_job = Counter(Execution.objects.filter(job_id__in=plain).values_list("job_id", flat=True))
    assert set(per_plain_job) == set(plain)  # none lost
    # The kills did take atomic jobs away mid-run: otherwise this run would prove nothing.
    assert Job.objects.filter(pk__in=atomic, attempts__gt=1).exists()
    duplicates = sum(count - 1 for count in per_plain_job.values())
    print(f"{kills} kills: plain jobs whose writes applied twice: {duplicates}; atomic: 0")


def test_reaped_and_run_again__the_late_original_is_refused_by_the_fence_and_rolled_back(
    start_worker, tmp_path
):
    marker, gate = tmp_path / "held", tmp_path / "gate"
    late = start_worker("--concurrency", "1", "--name", "late")
    job = store.enqueue("test.write_atomic", {"marker": str(marker), "gate": str(gate), "hold_on": [1]})
    held = _held(marker)
    _holds_open_transaction(held["backend"])

    # The reaper takes the job back from a worker it believes silent (the heartbeat that
    # would contradict it waits for this transaction's lock, and then no longer matches).
    with transaction.atomic():
        make_silent(job.pk, 3600)
        assert store.reap().requeued == 1
    start_worker("--concurrency", "1", "--name", "rerun")
    done = wait_status(job.pk, Status.SUCCEEDED, timeout=60)
    assert (done.attempts, done.locked_by) == (2, "rerun")
    assert _rows(job.pk) == [2]

    gate.touch()  # the original finishes late: its completion finds the job no longer its own
    wait_log(late, f"#{job.pk} attempt 1/10")
    wait_log(late, "rolled back")
    assert _session(held["backend"]) == ("idle", False)  # its transaction is over, not committed
    assert _rows(job.pk) == [2]
    job.refresh_from_db()
    assert (job.status, job.attempts, job.locked_by) == (Status.SUCCEEDED, 2, "rerun")
    assert late.process.poll() is None


def test_timeout__kills_the_child_and_its_open_transaction_dies_with_its_connection(start_worker, tmp_path):
    marker, gate = tmp_path / "held", tmp_path / "gate"
    start_worker("--concurrency", "1", "--name", "timer")
    job = store.enqueue(
        "test.write_atomic_timeout", {"marker": str(marker), "gate": str(gate), "hold_on": [1]}
    )
    held = _held(marker)
    _holds_open_transaction(held["backend"])  # its row is written, in a transaction not committed

    failed = wait_status(job.pk, Status.FAILED, timeout=60)  # the 5 s timeout kills the child
    _wait_session_gone(held["backend"])

    assert _rows(job.pk) == []
    assert "timeout" in failed.error
    assert list(JobAttempt.objects.filter(job=job).values_list("error_class", flat=True)) == ["JobTimeout"]


def test_shutdown_cut_off__rolls_the_writes_back_and_requeues_without_using_an_attempt(
    start_worker, tmp_path
):
    marker, gate = tmp_path / "held", tmp_path / "gate"
    worker = start_worker("--concurrency", "1", "--shutdown-timeout", "0.5", "--name", "stopping")
    job = store.enqueue("test.write_atomic", {"marker": str(marker), "gate": str(gate), "hold_on": [1]})
    held = _held(marker)
    _holds_open_transaction(held["backend"])

    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0
    _wait_session_gone(held["backend"])

    assert _rows(job.pk) == []
    job.refresh_from_db()
    assert (job.status, job.attempts, job.message) == (Status.QUEUED, 0, store.REQUEUED_AT_SHUTDOWN)


def test_atomic_job_progress__reaches_the_row_while_its_transaction_is_open(start_worker, tmp_path):
    marker, gate = tmp_path / "held", tmp_path / "gate"
    start_worker("--concurrency", "1", "--name", "progress")
    wait_registered("progress")
    job = store.enqueue(
        "test.write_atomic", {"marker": str(marker), "gate": str(gate), "hold_on": [1], "progress": True}
    )
    held = _held(marker)

    midway = wait_for(
        lambda: Job.objects.filter(pk=job.pk, status=Status.RUNNING, progress=50).first(),
        timeout=30,
        message="the atomic job's progress on its row",
    )
    assert midway.progress_message == "row written"
    _holds_open_transaction(held["backend"])  # ... while its own writes are not committed yet
    assert _rows(job.pk) == []

    gate.touch()
    done = wait_status(job.pk, Status.SUCCEEDED)
    assert done.progress == 100
    assert _rows(job.pk) == [1]
