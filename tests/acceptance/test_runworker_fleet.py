"""Real ``manage.py runworker`` fleets: exactly-once without crashes, and what survives a
worker killed with SIGKILL, a child that exits or segfaults, and a job that times out."""

from __future__ import annotations

import os
import signal
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction

from jobs import store
from jobs.models import Job, JobAttempt, Status, Worker
from tests.jobs_app.models import Execution
from tests.support.job_states import wait_finished, wait_status
from tests.support.waiting import wait_file, wait_for
from tests.support.workers import wait_registered

pytestmark = pytest.mark.django_db(transaction=True)


def _executions(job_id: int) -> list[int]:
    return list(Execution.objects.filter(job_id=job_id).values_list("attempt", flat=True))


def test_fleet__every_job_runs_exactly_once(start_worker, tmp_path):
    names = [f"fleet-{n}" for n in range(3)]
    # Nothing crashes here: a long lease keeps a worker slowed down by a loaded machine
    # from being taken for dead (that case has its own tests). Each worker gives the queue
    # both its slots (a plain runworker keeps one for the other queues).
    calm = {"JOBS_WORKER_LEASE": "60", "JOBS_REAP_AFTER": "60"}
    workers = [start_worker("--queue", "default:2", "--name", name, env=calm) for name in names]
    wait_registered(*names)

    # The work is shared: six jobs held at a gate fill the fleet's six slots, and a worker
    # claims no more jobs than it has idle children while their pace is unknown, so all
    # six run at once only if every worker took two. (How evenly a long run spreads
    # depends on the machine's load, so it is not asserted.)
    gate = tmp_path / "gate"
    held = store.enqueue_many("test.sleep", [{"seconds": 0, "gate": str(gate)} for _ in range(6)])
    assert held == 6
    wait_for(
        lambda: Job.objects.filter(type="test.sleep", status=Status.RUNNING).count() == 6,
        timeout=60,
        message="the six held jobs to run",
    )
    per_worker = Counter(Job.objects.filter(type="test.sleep").values_list("locked_by", flat=True))
    assert per_worker == dict.fromkeys(names, 2)
    gate.touch()

    assert store.enqueue_many("test.record", [{} for _ in range(3000)]) == 3000
    ids = list(Job.objects.values_list("pk", flat=True))
    wait_finished(ids, timeout=120)

    assert Job.objects.filter(type="test.record", status=Status.SUCCEEDED).count() == 3000
    per_job = Counter(Execution.objects.values_list("job_id", flat=True))
    assert set(per_job) == set(ids)
    assert set(per_job.values()) == {1}
    assert not Execution.objects.exclude(attempt=1).exists()
    assert not JobAttempt.objects.exists()
    assert all(worker.process.poll() is None for worker in workers)


def test_kill_9__job_comes_back_through_the_reaper_and_finishes_on_another_worker(start_worker, tmp_path):
    marker = tmp_path / "started"
    victim = start_worker("--concurrency", "1", "--name", "victim")
    long_job = store.enqueue("test.sleep", {"seconds": 3, "marker": str(marker)})
    queued = [store.enqueue("test.record", {}).pk for _ in range(20)]
    wait_file(marker)

    victim.kill_all()  # supervisor and children at once, mid-job
    assert Job.objects.get(pk=long_job.pk).status == Status.RUNNING  # nobody finished it

    rescuer = start_worker("--concurrency", "2", "--name", "rescuer")
    wait_finished([long_job.pk, *queued], timeout=60)

    job = Job.objects.get(pk=long_job.pk)
    assert (job.status, job.attempts, job.locked_by) == (Status.SUCCEEDED, 2, "rescuer")
    assert job.message == "Requeued after a worker restart."
    assert _executions(long_job.pk) == [2]  # the killed try never reached its end
    [lost] = JobAttempt.objects.filter(job=job)
    assert (lost.attempt, lost.worker, lost.error_class, lost.outcome) == (
        1,
        "victim",
        "WorkerLost",
        "queued",
    )
    # Nothing lost: every other job ran to its end too.
    assert Job.objects.filter(pk__in=queued, status=Status.SUCCEEDED).count() == len(queued)
    assert set(Execution.objects.filter(job_id__in=queued).values_list("job_id", flat=True)) == set(queued)
    assert "Reaper took back" in rescuer.log()


def test_kill_9__a_job_that_kills_its_worker_waits_out_its_backoff_instead_of_killing_the_next(
    start_worker, tmp_path
):
    runs = tmp_path / "runs"
    victim = start_worker("--concurrency", "1", "--name", "victim")
    job = store.enqueue("test.kill_worker", {"marker": str(runs)})  # backoff 600 s
    assert victim.wait(timeout=30) != 0  # the job took its whole worker down

    rescuer = start_worker("--concurrency", "1", "--name", "rescuer")
    lost = wait_for(
        lambda: JobAttempt.objects.filter(job_id=job.pk, error_class="WorkerLost").first(),
        timeout=60,
        message="the reaper to take the job back",
    )

    job.refresh_from_db()
    assert (job.status, job.attempts, job.message) == (Status.QUEUED, 1, "Requeued after a worker restart.")
    assert job.run_at >= lost.failed_at + timedelta(seconds=500)  # not at once: after its backoff
    wait_status(store.enqueue("test.record", {}).pk, Status.SUCCEEDED)  # the rescuer works on
    assert rescuer.process.poll() is None
    assert runs.read_text().split() == ["1"]  # it ran once, on the victim only


def test_os_exit__fails_only_that_try_and_the_worker_goes_on(start_worker):
    worker = start_worker("--concurrency", "1", "--name", "exiter")
    crashing = store.enqueue("test.exit", {"code": 1})  # 2 attempts
    others = [store.enqueue("test.record", {}).pk for _ in range(5)]
    wait_finished([crashing.pk, *others])

    job = Job.objects.get(pk=crashing.pk)
    assert (job.status, job.attempts) == (Status.FAILED, 2)
    assert "exited with code 1" in job.error
    tries = list(JobAttempt.objects.filter(job=job).values_list("attempt", "error_class", "outcome"))
    assert tries == [(1, "WorkerCrashed", "queued"), (2, "WorkerCrashed", "failed")]
    assert Job.objects.filter(pk__in=others, status=Status.SUCCEEDED).count() == len(others)
    assert Execution.objects.filter(job_id__in=others).count() == len(others)
    assert worker.process.poll() is None

    after = store.enqueue("test.record", {})  # the replaced child takes new work
    wait_status(after.pk, Status.SUCCEEDED)


def test_segfault__fails_that_job_and_the_worker_keeps_running(start_worker):
    worker = start_worker("--concurrency", "2", "--name", "segv")
    crashing = store.enqueue("test.segfault", {})  # 1 attempt
    wait_status(crashing.pk, Status.FAILED)
    job = Job.objects.get(pk=crashing.pk)
    assert "killed by SIGSEGV" in job.error
    assert JobAttempt.objects.get(job=job).error_class == "WorkerCrashed"

    after = [store.enqueue("test.record", {}).pk for _ in range(4)]
    wait_finished(after)
    assert Job.objects.filter(pk__in=after, status=Status.SUCCEEDED).count() == 4
    assert worker.process.poll() is None
    assert "crashed" in worker.log()


def test_timeout__stops_a_job_that_runs_too_long_and_counts_a_failed_try(start_worker):
    worker = start_worker("--concurrency", "1", "--name", "timer")
    slow = store.enqueue("test.slow", {"seconds": 30})  # timeout 0.5 s, 3 attempts
    after = store.enqueue("test.record", {})
    wait_finished([slow.pk, after.pk], timeout=30)

    job = Job.objects.get(pk=slow.pk)
    assert (job.status, job.attempts) == (Status.FAILED, 3)
    tries = JobAttempt.objects.filter(job=job)
    assert [t.error_class for t in tries] == ["JobTimeout"] * 3
    assert "longer than its 0.5s timeout" in tries[0].error
    assert Job.objects.get(pk=after.pk).status == Status.SUCCEEDED
    assert worker.process.poll() is None
    assert Worker.objects.filter(name="timer", stopped_at=None).exists()


def test_progress__reaches_the_row_while_the_job_runs(start_worker, tmp_path):
    start_worker("--concurrency", "1", "--name", "progress")
    # The job reports its first step, then holds until the gate opens: the row is looked at
    # while the job is surely running, however slowly this machine runs the test.
    gate = tmp_path / "gate"
    job = store.enqueue("test.progress", {"steps": 4, "pause": 0, "gate": str(gate)})
    midway = wait_for(
        lambda: Job.objects.filter(
            pk=job.pk, status=Status.RUNNING, progress__gt=0, progress__lt=100
        ).first(),
        timeout=30,
        message="progress below 100 while running",
    )
    assert midway.progress_message == "step 1 of 4"
    gate.touch()
    done = wait_status(job.pk, Status.SUCCEEDED)
    assert done.progress == 100


def test_progress__the_last_report_before_a_long_step_reaches_the_row(start_worker, tmp_path):
    """Reports that come within the progress interval are not dropped: the latest one is
    written when the interval ends, though the handler reports nothing more (it is busy)."""
    start_worker("--concurrency", "1", "--name", "reporter", env={"JOBS_PROGRESS_INTERVAL": "1"})
    gate = tmp_path / "gate"
    job = store.enqueue("test.report", {"messages": ["A", "B"], "gate": str(gate)})

    shown = wait_for(
        lambda: Job.objects.filter(pk=job.pk, status=Status.RUNNING, progress_message="B").first(),
        timeout=30,
        message="the report B on the running job's row",
    )

    assert shown.progress == 20
    gate.touch()
    assert wait_status(job.pk, Status.SUCCEEDED).progress_message == "B"


def test_crash_and_timeout_inside_a_batch__the_other_jobs_run_exactly_once(start_worker):
    """Short jobs go to a child in batches; a job that kills its child or times out in the
    middle of one fails alone, and the jobs around it run once each."""
    start_worker("--concurrency", "1", "--name", "batcher")
    warm_up = store.enqueue_many("test.record", [{} for _ in range(300)])
    wait_for(
        lambda: Job.objects.filter(status=Status.SUCCEEDED).count() == warm_up,
        timeout=60,
        message="the warm-up jobs (the lane learns that jobs are short)",
    )
    with transaction.atomic():  # one claimable block, in id order
        records = [store.enqueue("test.record", {}).pk for _ in range(15)]
        crash = store.enqueue("test.exit", {"code": 3}).pk
        records += [store.enqueue("test.record", {}).pk for _ in range(15)]
        slow = store.enqueue("test.slow", {"seconds": 30}).pk
        records += [store.enqueue("test.record", {}).pk for _ in range(15)]
    wait_finished([*records, crash, slow], timeout=60)

    per_job = Counter(Execution.objects.filter(job_id__in=records).values_list("job_id", flat=True))
    assert per_job == dict.fromkeys(records, 1)
    assert Job.objects.filter(pk__in=records, status=Status.SUCCEEDED).count() == len(records)
    assert Job.objects.filter(pk__in=records, attempts=1).count() == len(records)
    assert not JobAttempt.objects.filter(job_id__in=records).exists()
    assert (
        list(JobAttempt.objects.filter(job_id=crash).values_list("error_class", flat=True))
        == ["WorkerCrashed"] * 2
    )
    assert (
        list(JobAttempt.objects.filter(job_id=slow).values_list("error_class", flat=True))
        == ["JobTimeout"] * 3
    )


def _alive(pid: int) -> bool:
    """Running (a zombie counts as gone: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_supervisor_killed__its_children_stop_at_once_and_the_job_is_recovered(start_worker, tmp_path):
    marker = tmp_path / "started"
    orphaned = start_worker("--concurrency", "1", "--name", "orphaned")
    job = store.enqueue("test.sleep", {"seconds": 20, "marker": str(marker)})
    wait_file(marker)
    child_pid = int(marker.read_text())

    os.kill(orphaned.pid, signal.SIGKILL)  # only the supervisor
    wait_for(lambda: not _alive(child_pid), timeout=5, message="the child to stop with its supervisor")
    orphaned.kill_all()  # whatever else is left of its process group
    Job.objects.filter(pk=job.pk).update(payload={"seconds": 0.1})  # the rerun need not wait 20 s

    start_worker("--concurrency", "1", "--name", "heir")
    job = wait_status(job.pk, Status.SUCCEEDED, timeout=60)
    assert (job.attempts, job.locked_by) == (2, "heir")
    assert _executions(job.pk) == [2]
