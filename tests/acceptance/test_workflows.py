"""Workflows with real ``manage.py runworker`` processes: a step's writes, its completion and
the release of the steps after it commit together, so chains killed again and again end
with every step run once; a group's callback runs once, after its last member; a failed
member fails its workflow and its retry completes it; steps added at run time belong to
the workflow."""

from __future__ import annotations

from collections import Counter

import pytest

import jobs
from jobs.models import Job, Status, Workflow, WorkflowStep
from tests.jobs_app.models import Execution
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

QUICK = {"JOBS_POLL_INTERVAL": "0.05", "LOG_LEVEL": "WARNING"}  # one log line per step would slow the run


def s(value: str, **payload: object) -> jobs.Step:
    return jobs.step("test.step", {"value": value, **payload}, name=value)


def wait_workflows(ids: list[int], status: str, timeout: float) -> None:
    wait_for(
        lambda: Workflow.objects.filter(pk__in=ids, status=status).count() == len(ids),
        timeout=timeout,
        interval=0.1,
        message=f"{len(ids)} workflows to be {status}",
    )


def rows_by_job(job_ids: list[int]) -> dict[int, list[int]]:
    """Each job's Execution rows (their ids, in the order they were written)."""
    found: dict[int, list[int]] = {job_id: [] for job_id in job_ids}
    for row_id, job_id in (
        Execution.objects.filter(job_id__in=job_ids).order_by("id").values_list("id", "job_id")
    ):
        found[job_id].append(row_id)
    return found


def test_200_chains_of_three_atomic_steps_under_repeated_sigkills__each_step_writes_its_row_once(
    start_worker,
):
    """Three workers of two children run 200 chains of three atomic steps (each inserts one
    row) while whole workers are killed with SIGKILL six times and replaced. A kill between
    a step's commit and what follows loses nothing (the next steps were released in that
    commit), and a kill before it leaves nothing (the step runs again): every chain
    succeeds, every step's row exists exactly once, each after the one before it."""
    workers = [start_worker("--concurrency", "2", env=QUICK) for _ in range(3)]
    step = {"sleep": 0.005}
    started = [
        jobs.start(
            jobs.chain(*(jobs.step("test.write_atomic", step, name=f"step {n}") for n in (1, 2, 3))),
            name="chain",
        ).pk
        for _ in range(200)
    ]
    total, kills = 600, 6

    for kill in range(kills):
        done_before_kill = total * (kill + 1) // (kills + 2)
        wait_for(
            lambda at_least=done_before_kill: (
                WorkflowStep.objects.filter(status="succeeded").count() >= at_least
            ),
            timeout=180,
            interval=0.02,
            message=f"{done_before_kill} steps done before kill {kill + 1}",
        )
        slot = kill % len(workers)
        workers[slot].kill_all()
        workers[slot] = start_worker("--concurrency", "2", env=QUICK)  # the fleet replaces the task
    wait_workflows(started, Workflow.Status.SUCCEEDED, timeout=300)

    step_jobs = {
        (workflow, name): job
        for job, workflow, name in Job.objects.filter(step__workflow_id__in=started).values_list(
            "pk", "step__workflow_id", "step__name"
        )
    }
    assert len(step_jobs) == total  # one job per step: none released twice, none forgotten
    assert Job.objects.filter(pk__in=step_jobs.values(), status=Status.SUCCEEDED).count() == total
    rows = rows_by_job(list(step_jobs.values()))
    assert all(len(written) == 1 for written in rows.values()), "a step's row written twice, or not at all"
    for workflow in started:  # each step's row after the one before it: released by its commit
        order = [rows[step_jobs[workflow, f"step {n}"]][0] for n in (1, 2, 3)]
        assert order == sorted(order)
    # The kills did take steps away mid-run: otherwise this run would prove nothing.
    assert Job.objects.filter(pk__in=step_jobs.values(), attempts__gt=1).exists()


def test_group_of_50__its_callback_runs_once_after_the_last_member(start_worker):
    """Fifty members finish on four children at once, each counting the callback down in
    its own transaction: exactly one of them releases it, after every member committed."""
    for _ in range(2):
        start_worker("--concurrency", "2", env=QUICK)
    workflow = jobs.start(jobs.group([s(f"member {n}") for n in range(50)], then=s("callback")), name="fifty")

    wait_workflows([workflow.pk], Workflow.Status.SUCCEEDED, timeout=120)
    step_jobs = dict(Job.objects.filter(step__workflow_id=workflow.pk).values_list("step__name", "pk"))
    assert len(step_jobs) == 51
    rows = rows_by_job(list(step_jobs.values()))
    assert all(len(written) == 1 for written in rows.values())
    callback = rows[step_jobs.pop("callback")][0]
    assert callback > max(rows[job][0] for job in step_jobs.values())  # after the last member
    result = WorkflowStep.objects.get(workflow_id=workflow.pk, name="callback").result
    assert result["upstream"] == sorted(f"member {n}" for n in range(50))


def test_failed_member__fails_the_workflow_and_its_retry_completes_it_with_the_steps_added_at_run_time(
    start_worker, tmp_path
):
    """A member fails for good: its workflow fails and the callback is cancelled, saying
    why, while its siblings run on (one of them adds three steps, which run too). Retried
    from the job's page, the member succeeds and the callback runs, after the added steps."""
    start_worker("--concurrency", "2", env=QUICK)
    fixed = tmp_path / "fixed"
    flow = jobs.group([s("flaky", fail_unless=str(fixed)), s("fine"), s("scan", add=3)], then=s("end"))
    workflow = jobs.start(flow, name="resumable")

    wait_workflows([workflow.pk], Workflow.Status.FAILED, timeout=60)
    wait_for(
        lambda: WorkflowStep.objects.filter(workflow_id=workflow.pk, status="succeeded").count() == 5,
        timeout=60,
        message="the siblings and the added steps to succeed",
    )
    rows = {row.name: row for row in WorkflowStep.objects.filter(workflow_id=workflow.pk)}
    assert (rows["flaky"].status, rows["end"].status) == ("failed", "cancelled")
    assert rows["end"].message == "Upstream step #1 flaky failed."
    assert {rows[f"scan/{n}"].added_by for n in (1, 2, 3)} == {rows["scan"].pk}
    assert not Job.objects.filter(step_id=rows["end"].pk).exists()

    fixed.touch()
    jobs.retry(Job.objects.get(step_id=rows["flaky"].pk))
    wait_workflows([workflow.pk], Workflow.Status.SUCCEEDED, timeout=60)

    end = WorkflowStep.objects.get(pk=rows["end"].pk)
    assert end.result["upstream"] == ["fine", "flaky", "scan", "scan/1", "scan/2", "scan/3"]
    per_job = Counter(
        Execution.objects.filter(
            job_id__in=Job.objects.filter(step__workflow_id=workflow.pk).values("pk")
        ).values_list("job_id", flat=True)
    )
    assert sorted(per_job.values()) == [1] * 7  # every step's row once (the failed try's rolled back)
