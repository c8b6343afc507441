"""The backlog-per-task metric: measured from the jobs table and the worker registry, and
put to CloudWatch (a real moto server over HTTP), where ECS target tracking would read it."""

from __future__ import annotations

import logging
from datetime import timedelta

import boto3
import pytest
from django.utils import timezone

import jobs
from jobs import metrics
from jobs.models import Job, Status, Worker
from jobs.timers import run_timer, timers
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db

NAMESPACE = "JobPlatform/Test"


def _worker(
    name: str, *, seen_ago: float = 0, stopped: bool = False, queues: list[str] | None = None
) -> Worker:
    now = timezone.now()
    return Worker.objects.create(
        name=name,
        host="test",
        pid=1,
        queues=queues or [],
        last_seen=now - timedelta(seconds=seen_ago),
        stopped_at=now if stopped else None,
    )


def _backlog() -> None:
    """8 due jobs (6 ingestion, 2 ai), plus ones that must not count: future, running."""
    for n in range(6):
        jobs.enqueue("repository.ingest", {"repository_id": n})
    for n in range(2):
        jobs.enqueue("brain.derive", {"repository_id": n})
    jobs.enqueue("brain.derive", {"repository_id": 99}, run_at=timezone.now() + timedelta(minutes=5))
    running = jobs.enqueue("pullrequest.sync", {"repository_id": 1})
    Job.objects.filter(pk=running.pk).update(status=Status.RUNNING, locked_by="w1")


def test_measure__divides_due_jobs_by_live_workers(settings):
    settings.JOBS_WORKER_LEASE = 60
    _backlog()
    _worker("w1")
    _worker("w2", seen_ago=5)
    _worker("dead", seen_ago=600)
    _worker("stopped", stopped=True)

    backlog = metrics.measure()

    assert backlog.live_workers == 2
    assert backlog.queued["ingestion"] == 6 and backlog.queued["ai"] == 2 and backlog.queued["default"] == 0
    assert backlog.total == 8
    assert backlog.per_task == 4.0
    assert backlog.per_task_of("ingestion") == 3.0


def test_measure__divides_each_queue_by_the_workers_that_serve_it():
    _backlog()
    _worker("ai-only", queues=["ai:1"])
    _worker("the-rest", queues=["default,ingestion:2"])
    _worker("everything", queues=["ai,default,ingestion:2"])

    backlog = metrics.measure()

    assert backlog.per_task == 8 / 3
    assert backlog.per_task_of("ai") == 1.0  # 2 jobs, 2 workers serve ai
    assert backlog.per_task_of("ingestion") == 3.0  # 6 jobs, 2 workers serve ingestion


def test_measure__counts_an_empty_fleet_as_one_task_so_scaling_out_from_zero_works():
    _backlog()
    _worker("stopped", stopped=True)
    backlog = metrics.measure()
    assert (backlog.live_workers, backlog.tasks) == (0, 1)
    assert backlog.per_task == 8.0


def test_report__without_a_namespace_only_logs(settings, caplog):
    settings.JOBS_CLOUDWATCH_NAMESPACE = ""
    settings.AWS_ENDPOINT_URL = "http://127.0.0.1:9"  # nothing listens: a call would fail
    _backlog()
    with caplog.at_level(logging.INFO, logger="jobs.metrics"):
        line = metrics.report_backlog()
    assert "backlog per task 8.00" in line and "CloudWatch" not in line
    assert "backlog per task 8.00" in caplog.text


def test_report__puts_the_metric_to_cloudwatch(settings, moto_reset):
    settings.JOBS_CLOUDWATCH_NAMESPACE = NAMESPACE
    settings.AWS_ENDPOINT_URL = moto_reset
    settings.AWS_REGION = "eu-central-1"
    _backlog()
    _worker("w1")
    _worker("w2")

    line = metrics.report_backlog()

    assert f"sent to CloudWatch {NAMESPACE}" in line
    cloudwatch = boto3.client("cloudwatch", endpoint_url=moto_reset, region_name="eu-central-1")
    now = timezone.now()

    def maximum(name: str, **dimensions: str) -> float:
        stats = cloudwatch.get_metric_statistics(
            Namespace=NAMESPACE,
            MetricName=name,
            Dimensions=[{"Name": key, "Value": value} for key, value in dimensions.items()],
            StartTime=now - timedelta(minutes=10),
            EndTime=now + timedelta(minutes=10),
            Period=60,
            Statistics=["Maximum"],
        )
        (point,) = stats["Datapoints"]
        return point["Maximum"]

    assert maximum("BacklogPerTask") == 4.0
    assert maximum("BacklogPerTask", Queue="ingestion") == 3.0
    assert maximum("BacklogPerTask", Queue="ai") == 1.0
    assert maximum("BacklogPerTask", Queue="default") == 0.0
    assert maximum("QueuedJobs") == 8.0
    assert maximum("LiveWorkers") == 2.0

    listed = cloudwatch.list_metrics(Namespace=NAMESPACE, MetricName="BacklogPerTask")["Metrics"]
    queues = {d["Value"] for metric in listed for d in metric["Dimensions"] if d["Name"] == "Queue"}
    assert {"ingestion", "ai", "default"} <= queues
    assert any(not metric["Dimensions"] for metric in listed)


def test_sweep_timer__reports_the_backlog():
    assert "jobs.tasks.report_backlog_per_task" in [step.name for step in timers()["sweep"]]
    results = run_timer("sweep")
    assert str(results["jobs.tasks.report_backlog_per_task"]).startswith("backlog per task")


@pytest.mark.django_db(transaction=True)
def test_measure__counts_a_real_worker_for_the_queues_it_serves(start_worker):
    for n in range(4):
        jobs.enqueue("repository.ingest", {"repository_id": n}, run_at=timezone.now() + timedelta(hours=1))
    worker = start_worker("--queue", "ai:1", "--queue", "default:1")
    wait_for(lambda: metrics.measure().live_workers == 1, timeout=60, message="the worker to register")
    Job.objects.update(run_at=timezone.now())

    backlog = metrics.measure()

    assert {queue: backlog.serving[queue] for queue in ("ai", "default", "ingestion")} == {
        "ai": 1,
        "default": 1,
        "ingestion": 0,
    }
    assert backlog.per_task_of("ingestion") == 4.0
    worker.stop()
    assert metrics.measure().live_workers == 0
