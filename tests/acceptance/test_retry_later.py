"""``RetryLater`` through a real ``manage.py runworker``: a job that is rate-limited twice
and then succeeds ends succeeded on its first attempt, and never runs before its time."""

from __future__ import annotations

import pytest

from jobs import store
from jobs.models import JobAttempt, Status
from tests.support.job_states import wait_status

pytestmark = pytest.mark.django_db(transaction=True)


def test_retry_later__two_waits_then_success_use_one_attempt_and_honour_run_at(start_worker, tmp_path):
    log = tmp_path / "runs.log"
    job = store.enqueue("test.rate_limited", {"path": str(log), "waits": 2, "delay": 0.5})
    worker = start_worker("--concurrency", "1", "--poll-interval", "0.1")

    done = wait_status(job.pk, Status.SUCCEEDED, timeout=60)

    assert (done.attempts, done.max_attempts, done.error) == (1, 1, "")
    lines = [line.split() for line in log.read_text().splitlines()]
    starts = [float(words[1]) for words in lines if words[0] == "start"]
    untils = [float(words[1]) for words in lines if words[0] == "until"]
    assert [words[3] for words in lines if words[0] == "start"] == ["1", "1", "1"]  # ctx.attempt
    assert len(untils) == 2
    assert starts[1] >= untils[0] and starts[2] >= untils[1]  # never claimed before its run_at
    outcomes = list(JobAttempt.objects.filter(job=job).values_list("outcome", "error"))
    assert outcomes == [("postponed", "Rate limited (1/2)."), ("postponed", "Rate limited (2/2).")]
    assert "rescheduled for" in worker.log()


def test_retry_later__a_wait_of_a_century_is_capped_by_the_engine_and_the_job_runs_again(
    start_worker, tmp_path
):
    log = tmp_path / "runs.log"
    job = store.enqueue("test.rate_limited", {"path": str(log), "waits": 1, "delay": 3e9})
    start_worker("--concurrency", "1", "--poll-interval", "0.1", env={"JOBS_MAX_RETRY_LATER_SECONDS": "1"})

    done = wait_status(job.pk, Status.SUCCEEDED, timeout=60)

    assert (done.attempts, done.error) == (1, "")
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["start", "until", "start"]
    assert JobAttempt.objects.get(job=job).outcome == "postponed"
