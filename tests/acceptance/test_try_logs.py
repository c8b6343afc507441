"""Each try's log through a real ``manage.py runworker``: a running try's log reaches its row
(and the job's page) while it runs, each try keeps its own, a failed try's last lines sit
beside its error, a quiet job stores nothing, and a django.tasks task gets the same; and
the engine's bulk job (Retry all matching) runs there with its progress."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from jobs import bulk, store
from jobs.models import Job, JobAttempt, Rollup, Status, TryLog
from tests.admin_jobs import PAGE, make_operator, make_viewer
from tests.support.job_states import wait_status
from tests.support.waiting import wait_for
from tests.tasks_backend import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_try_logs__live_while_running_one_per_try_bounded_and_on_the_job_page(start_worker, tmp_path):
    gate = tmp_path / "gate"
    chatty = store.enqueue("test.chatty", {"lines": 30, "fail_times": 1, "gate": str(gate)})
    quiet = store.enqueue("test.noop", {})
    task = tasks.chatty_task.enqueue("hello")
    crashing = store.enqueue("test.chatty", {"crash": True})
    # Retry all matching, through the same worker: 1,500 failed no-op jobs, two batches.
    now = timezone.now()
    Job.objects.bulk_create(
        Job(
            type="test.noop",
            queue="default",
            status=Status.FAILED,
            attempts=3,
            error="E: outage",
            finished_at=now,
        )
        for _ in range(1500)
    )
    operator = Client()
    operator.force_login(make_operator())
    operator.post(f"{PAGE}matching/", {"action": "retry", "error": "outage"})
    start_worker("--concurrency", "1", "--poll-interval", "0.1", env={"JOBS_TRY_LOG_LINES": "10"})

    # The first try logged its first line and waits: the line is on its row already.
    live = wait_for(
        lambda: TryLog.objects.filter(job_id=chatty.pk, attempt=1, text__contains="try 1 line 0").first(),
        timeout=30,
        message="the running try's first line on its row",
    )
    assert store_status(chatty.pk) == Status.RUNNING and live.cut == ""
    client = Client()
    client.force_login(make_viewer())
    page = client.get(f"{PAGE}{chatty.pk}/change/").content.decode()
    assert "try 1 line 0" in page and "so far (running)" in page
    gate.write_text("go")

    wait_status(chatty.pk, Status.SUCCEEDED, timeout=30)
    wait_status(int(task.id), Status.SUCCEEDED, timeout=30)
    wait_status(quiet.pk, Status.SUCCEEDED, timeout=30)
    wait_status(crashing.pk, Status.FAILED, timeout=60)
    # A child that died mid-try: the lines it logged before its end are kept with the try.
    assert "try 1 line 0" in TryLog.objects.get(job_id=crashing.pk, attempt=1).text
    logs = {row.attempt: row for row in TryLog.objects.filter(job_id=chatty.pk)}
    assert sorted(logs) == [1, 2]
    first, second = logs[1].text, logs[2].text
    assert "try 1 line 0" in first and "try 2 line 0" not in first and "try 2 line 29" in second
    assert "try 1 line 0 red" in first  # cleaned: no NUL, no colour codes
    assert "debug detail" not in first  # below JOBS_TRY_LOG_LEVEL (INFO)
    assert logs[2].lines == 30 and logs[2].cut.startswith("20 of 30 lines left out after line 5")
    assert TryLog.objects.filter(job_id=quiet.pk).count() == 0  # logged nothing: no row
    assert "task says hello" in TryLog.objects.get(job_id=int(task.id)).text

    bulk_job = wait_status(Job.objects.get(type=bulk.TYPE).pk, Status.SUCCEEDED, timeout=60)
    assert bulk_job.progress_message == "1,500 of 1,500 queued again (by operator)"
    wait_for(
        lambda: Job.objects.filter(type="test.noop", status=Status.SUCCEEDED).count() == 1501, timeout=60
    )

    # The supervisor's rollup (written once a second): the chatty job's retried and succeeded tries.
    wait_for(
        lambda: (
            {"retried", "succeeded"}
            <= set(Rollup.objects.filter(type="test.chatty", span=1).values_list("outcome", flat=True))
        ),
        timeout=30,
        message="the rollup of the chatty job's tries",
    )

    failed_try = JobAttempt.objects.get(job_id=chatty.pk)
    page = client.get(f"{PAGE}{chatty.pk}/change/").content.decode()
    entry = page[page.index(f'id="attempt-{failed_try.pk}"') : page.index('id="job-try-logs"')]
    assert "Last lines logged before the error" in entry
    assert "try 1 line 29" in entry and "try 1 line 0" not in entry  # its last ten lines
    assert "try 2 line 29" in page and "20 of 30 lines left out" in page


def store_status(job_id: int) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job_id)
