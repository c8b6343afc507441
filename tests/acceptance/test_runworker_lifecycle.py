"""A real ``manage.py runworker`` through its life: waking on NOTIFY, per-queue lanes,
``--burst``, SIGTERM with a deadline, a database that is not there yet, a taken name."""

from __future__ import annotations

import re
import signal
import subprocess
from collections import Counter
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from jobs import store
from jobs.models import Job, JobAttempt, Status
from tests.jobs_app.models import Execution
from tests.support.job_states import wait_status
from tests.support.waiting import wait_file, wait_for
from tests.support.workers import wait_log, wait_registered

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.postgres_only(
    "LISTEN/NOTIFY; MariaDB's workers poll (see test_poll__an_idle_worker_finds_new_work)"
)
def test_notify__wakes_an_idle_worker_whose_next_poll_is_an_hour_away(start_worker):
    start_worker("--concurrency", "1", "--poll-interval", "3600", "--name", "listener")
    wait_registered("listener")
    # A first job proves the worker is in its loop; after it the worker is idle and only a
    # notification can wake it: its next poll is an hour away, so a job that runs within
    # the minute each wait allows was started by NOTIFY, however loaded the machine. How
    # soon it starts is a figure of bench.throughput (idle wake-up), not asserted here.
    wait_status(store.enqueue("test.record", {}).pk, Status.SUCCEEDED, timeout=60)
    for _ in range(3):
        wait_status(store.enqueue("test.record", {}).pk, Status.SUCCEEDED, timeout=60)


@pytest.mark.postgres_only("LISTEN/NOTIFY; MariaDB's workers poll")
def test_notify__a_notice_of_keyed_jobs_alone_wakes_an_idle_worker_for_them(start_worker):
    """The enqueue of jobs that all carry limit keys notices ``keyed:<queue>``: the worker
    wakes for it and claims them through flow control, its next poll an hour away."""
    start_worker("--concurrency", "1", "--poll-interval", "3600", "--name", "keyed-listener")
    wait_registered("keyed-listener")
    wait_status(store.enqueue("test.record", {}).pk, Status.SUCCEEDED, timeout=60)  # in its loop
    for _ in range(2):
        wait_status(store.enqueue("test.flow_type", {}).pk, Status.SUCCEEDED, timeout=60)


def test_poll__an_idle_worker_finds_new_work(start_worker):
    # MariaDB has no LISTEN/NOTIFY: idle workers poll. On PostgreSQL a worker behind a
    # transaction pooler without a direct listening connection polls the same way.
    worker = start_worker(
        "--concurrency", "1", "--poll-interval", "0.2", "--name", "poller",
        env={"JOBS_DATABASE_POOL_MODE": "transaction"},
    )  # fmt: skip
    assert re.search(r"started: .*; polls", wait_log(worker, "started"))
    wait_registered("poller")
    for _ in range(3):  # each one enqueued while the worker idles between polls
        wait_status(store.enqueue("test.record", {}).pk, Status.SUCCEEDED, timeout=60)


def test_lanes__an_ai_job_runs_while_the_default_lane_is_full(start_worker, tmp_path):
    start_worker("--queue", "default:1", "--queue", "ai:1", "--shutdown-timeout", "0.5", "--name", "lanes")
    marker = tmp_path / "default-busy"
    long_jobs = [store.enqueue("test.sleep", {"seconds": 60, "marker": str(marker)}).pk for _ in range(3)]
    wait_file(marker)

    ai = store.enqueue("test.ai", {})
    wait_status(ai.pk, Status.SUCCEEDED, timeout=15)
    statuses = Counter(Job.objects.filter(pk__in=long_jobs).values_list("status", flat=True))
    assert statuses == {Status.RUNNING: 1, Status.QUEUED: 2}


def test_fair_share__two_long_ai_jobs_leave_a_slot_for_a_job_of_another_queue(start_worker, tmp_path):
    """A plain runworker (two slots, every queue): no queue may hold both slots while
    another queue has due jobs, so a job of another queue starts while the long ones wait
    and run, here enqueued after the worker has had every chance to take both ai jobs."""
    gate = tmp_path / "gate"
    long_ai = [
        store.enqueue("test.ai", {"marker": str(tmp_path / f"ai-{n}"), "gate": str(gate)}).pk
        for n in range(2)
    ]
    worker = start_worker("--concurrency", "2", "--shutdown-timeout", "0.5", "--name", "shared")
    wait_for(
        lambda: any((tmp_path / f"ai-{n}").exists() for n in range(2)),
        timeout=30,
        message="an ai job to start",
    )
    wait_log(worker, "start test.ai")

    other = store.enqueue("test.record", {})  # queue default, enqueued while the ai jobs hold on

    wait_status(other.pk, Status.SUCCEEDED, timeout=30)
    statuses = Counter(Job.objects.filter(pk__in=long_ai).values_list("status", flat=True))
    assert statuses == {Status.RUNNING: 1, Status.QUEUED: 1}
    assert "at most 1 per queue" in worker.log()
    gate.touch()
    for job_id in long_ai:  # the second ai job runs once a slot is free of the first
        wait_status(job_id, Status.SUCCEEDED, timeout=30)


def test_fair_share__short_jobs_of_one_queue_borrow_the_reserved_slot_until_another_queue_has_work(
    start_worker, tmp_path
):
    """A plain runworker: jobs known to be short (a 100 ms try of their type seen) run two
    at once while no other queue has due work; once another queue has, its job gets the
    slot first, and the short jobs borrow it again when that job is done."""
    start_worker("--concurrency", "2", "--shutdown-timeout", "0.5", "--name", "borrower")
    wait_status(store.enqueue("test.sleep", {"seconds": 0.1}).pk, Status.SUCCEEDED, timeout=60)

    # Each of the pair waits (up to a minute) for the other to start: they end together
    # within the wait below only if both slots run the default queue at once.
    first, second = tmp_path / "first", tmp_path / "second"
    pair = [
        store.enqueue("test.sleep", {"seconds": 0.1, "marker": str(first), "gate": str(second)}).pk,
        store.enqueue("test.sleep", {"seconds": 0.1, "marker": str(second), "gate": str(first)}).pk,
    ]
    for job_id in pair:
        wait_status(job_id, Status.SUCCEEDED, timeout=30)

    # One default job holds a slot; then a default job and an ai job become due together,
    # the default one first in claim order: the free slot goes to ai, and only then does
    # the default job borrow it (while the first still runs).
    hold, holding = tmp_path / "hold", tmp_path / "holding"
    held = store.enqueue("test.sleep", {"seconds": 0, "marker": str(holding), "gate": str(hold)}).pk
    wait_file(holding)
    with transaction.atomic():
        short = store.enqueue("test.sleep", {"seconds": 0.1}).pk
        ai = store.enqueue("test.ai", {}).pk
    wait_status(short, Status.SUCCEEDED, timeout=30)
    wait_status(ai, Status.SUCCEEDED, timeout=30)
    ended = list(
        Execution.objects.filter(job_id__in=[short, ai]).order_by("id").values_list("job_id", flat=True)
    )
    assert ended == [ai, short]
    assert Job.objects.get(pk=held).status == Status.RUNNING
    hold.touch()
    wait_status(held, Status.SUCCEEDED, timeout=30)


def test_children__hold_no_socket_of_the_supervisors_first_or_replaced(start_worker, tmp_path):
    """The children's forkserver is forked from the supervisor before it connects: neither
    the first children nor one that replaces a dead child (forked while the supervisor's
    connections are open) holds a TCP socket but the database connection it opened itself
    as it started (one of the supervisor's would make two)."""
    start_worker("--concurrency", "1", "--name", "sockets")
    first = tmp_path / "first"
    wait_status(store.enqueue("test.sockets", {"path": str(first)}).pk, Status.SUCCEEDED, timeout=60)
    crashed = store.enqueue("test.exit", {"code": 3}).pk  # twice: two children die
    wait_status(crashed, Status.FAILED, timeout=30)
    replaced = tmp_path / "replaced"
    wait_status(store.enqueue("test.sockets", {"path": str(replaced)}).pk, Status.SUCCEEDED, timeout=60)
    assert (first.read_text(), replaced.read_text()) == ("1", "1")


def test_burst__drains_what_is_due_logs_each_job_and_exits(start_worker):
    due = [store.enqueue("test.record", {}).pk for _ in range(5)]
    due.append(store.enqueue("test.ai", {}).pk)
    later = store.enqueue("test.record", {}, run_at=timezone.now() + timedelta(hours=1))

    worker = start_worker("--burst", "--concurrency", "2", "--name", "burst")
    assert worker.wait(timeout=60) == 0

    assert Job.objects.filter(pk__in=due, status=Status.SUCCEEDED).count() == len(due)
    assert Job.objects.get(pk=later.pk).status == Status.QUEUED
    log = worker.log()
    starts = re.findall(r"start (test\.\w+) #(\d+) attempt 1/\d+", log)
    ends = re.findall(r"end (test\.\w+) #(\d+) attempt 1/\d+ [\d.]+ ?ms succeeded", log)
    assert sorted(int(job_id) for _, job_id in starts) == sorted(due)
    assert sorted(int(job_id) for _, job_id in ends) == sorted(due)
    assert ("test.ai", str(due[-1])) in ends


def test_sigterm__short_job_finishes_long_job_is_cut_off_and_requeued_without_using_an_attempt(
    start_worker, tmp_path
):
    short_marker, long_marker = tmp_path / "short", tmp_path / "long"
    short = store.enqueue("test.sleep", {"seconds": 1, "marker": str(short_marker)})
    long = store.enqueue("test.sleep", {"seconds": 120, "marker": str(long_marker)})
    Job.objects.filter(pk=long.pk).update(attempts=1)  # it already had one failed try
    worker = start_worker("--concurrency", "2", "--shutdown-timeout", "3", "--name", "stopping")
    wait_file(short_marker)
    wait_file(long_marker)
    assert Job.objects.get(pk=long.pk).attempts == 2  # claimed: this try counts while it runs

    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0

    done = Job.objects.get(pk=short.pk)
    assert done.status == Status.SUCCEEDED
    assert list(Execution.objects.filter(job_id=short.pk).values_list("attempt", flat=True)) == [1]
    cut = Job.objects.get(pk=long.pk)
    assert (cut.status, cut.attempts, cut.locked_by) == (Status.QUEUED, 1, None)
    assert cut.message == "Stopped at worker shutdown and requeued."
    assert cut.run_at <= timezone.now()  # for another worker to take at once
    assert not JobAttempt.objects.exists()
    assert not Execution.objects.filter(job_id=long.pk).exists()
    assert "cut off at shutdown" in worker.log()


def test_sigterm__a_job_finishing_during_shutdown_is_not_taken_by_another_worker(start_worker, tmp_path):
    """The grace period may outlast the worker lease: the stopping worker must still look
    alive, or a second worker's reaper runs the job a second time."""
    marker = tmp_path / "started"
    job = store.enqueue("test.sleep", {"seconds": 6, "marker": str(marker)})
    stopping = start_worker("--concurrency", "1", "--shutdown-timeout", "30", "--name", "stopping")
    wait_file(marker)
    start_worker("--concurrency", "1", "--name", "bystander")
    wait_registered("bystander")

    stopping.signal(signal.SIGTERM)
    assert stopping.wait(timeout=30) == 0

    job = wait_status(job.pk, Status.SUCCEEDED)
    assert (job.attempts, job.locked_by) == (1, "stopping")
    assert list(Execution.objects.filter(job_id=job.pk).values_list("attempt", flat=True)) == [1]
    assert not JobAttempt.objects.exists()


def test_sigterm_to_the_whole_process_group__running_job_finishes_and_nothing_is_replaced(
    start_worker, tmp_path
):
    """A stopping worker replaces no child, and says nothing of it, also when the signal
    reaches every process of the worker at once (the forkserver included)."""
    marker = tmp_path / "started"
    job = store.enqueue("test.sleep", {"seconds": 2, "marker": str(marker)})
    worker = start_worker("--concurrency", "2", "--shutdown-timeout", "60", "--name", "grouped")
    wait_file(marker)

    worker.signal_group(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0

    job.refresh_from_db()
    assert (job.status, job.attempts) == (Status.SUCCEEDED, 1)
    assert not JobAttempt.objects.exists()
    log = worker.log()
    assert "Worker grouped stopped." in log
    assert "replacing" not in log and "child process" not in log


def test_database_unreachable__worker_logs_that_it_retries_instead_of_crashing(start_worker):
    worker = start_worker(
        "--concurrency",
        "1",
        "--name",
        "early",
        env={"DATABASE_URL": "postgres://postgres@127.0.0.1:1/nowhere"},
    )
    wait_log(worker, "Database unreachable at start-up")
    wait_for(lambda: worker.log().count("Database unreachable") >= 2, timeout=15, message="a second attempt")
    assert worker.process.poll() is None

    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    assert "Traceback" not in worker.log()


def test_name__a_second_worker_cannot_take_a_live_workers_name(start_worker):
    start_worker("--concurrency", "1", "--name", "taken")
    wait_registered("taken")
    second = start_worker("--concurrency", "1", "--name", "taken")
    try:
        code = second.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("the second worker kept running under a taken name")
    assert code != 0
    assert "A live worker already runs under the name 'taken'" in second.log()


def test_sigterm_twice__stops_at_once_and_requeues_the_running_job(start_worker, tmp_path):
    marker = tmp_path / "started"
    job = store.enqueue("test.sleep", {"seconds": 120, "marker": str(marker)})
    worker = start_worker("--concurrency", "1", "--shutdown-timeout", "120", "--name", "impatient")
    wait_file(marker)

    worker.signal(signal.SIGTERM)
    wait_log(worker, "got SIGTERM")
    worker.signal(signal.SIGTERM)  # a second signal does not wait for the 120 s deadline
    assert worker.wait(timeout=20) == 0

    job.refresh_from_db()
    assert (job.status, job.attempts, job.message) == (
        Status.QUEUED,
        0,
        "Stopped at worker shutdown and requeued.",
    )


def test_unknown_type__a_row_of_a_type_no_longer_declared_fails_at_once(start_worker):
    store.enqueue("test.noop", {})
    Job.objects.update(type="gone.type")  # declared once, since removed from the code
    job = Job.objects.get()
    start_worker("--concurrency", "1", "--name", "strict")
    job = wait_status(job.pk, Status.FAILED)
    assert job.attempts == 1
    assert "Unknown job type 'gone.type'" in job.error
    wait_status(store.enqueue("test.record", {}).pk, Status.SUCCEEDED)
