"""The scaling signals: backlog per task, the oldest due job's age, running and recently
failed jobs, measured from the jobs table and the worker registry, and put to CloudWatch (a
real moto server over HTTP), where ECS target tracking and the alarms would read them."""

from __future__ import annotations

import logging
from datetime import timedelta

import boto3
import pytest
from django.db import connection
from django.utils import timezone

import jobs
from jobs import metrics
from jobs.models import Job, Status, Worker
from jobs.timers import run_timer, timers
from tests.factories import JobFactory
from tests.support.database import on_mariadb
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


def _ages(now) -> None:
    """Due jobs that became due 90 s, 30 s (ingestion) and 10 s (ai) before ``now``; and jobs
    that must not count: one waiting out a retry's backoff, one running for long."""
    JobFactory(type="repository.ingest", run_at=now - timedelta(seconds=30))
    JobFactory(type="repository.ingest", run_at=now - timedelta(seconds=90))
    JobFactory(type="brain.derive", run_at=now - timedelta(seconds=10))
    JobFactory(type="brain.derive", run_at=now + timedelta(seconds=60), error="RuntimeError: retry")
    JobFactory(type="pullrequest.sync", running=True, run_at=now - timedelta(hours=1))


def test_measure__reports_how_long_the_oldest_due_job_of_each_queue_has_waited():
    now = timezone.now()
    _ages(now)

    figures = metrics.measure(now)

    assert figures.oldest_due_age("ingestion") == 90.0
    assert figures.oldest_due_age("ai") == 10.0
    assert figures.oldest_due_age("default") == 0.0  # only a running job there
    assert figures.oldest_due_age() == 90.0


def test_measure__counts_running_jobs_per_queue():
    JobFactory.create_batch(2, type="repository.ingest", running=True)
    JobFactory(type="brain.derive", running=True)
    JobFactory(type="brain.derive")
    JobFactory(type="brain.derive", succeeded=True)

    figures = metrics.measure()

    assert {queue: figures.running[queue] for queue in ("ai", "default", "ingestion")} == {
        "ai": 1,
        "default": 0,
        "ingestion": 2,
    }
    assert figures.total_running == 3


def test_measure__counts_jobs_that_failed_for_good_within_the_window(settings):
    settings.JOBS_METRICS_WINDOW = 300
    now = timezone.now()
    JobFactory(type="repository.ingest", failed=True, finished_at=now - timedelta(seconds=60))
    JobFactory(type="brain.derive", failed=True, finished_at=now - timedelta(seconds=299))
    JobFactory(type="brain.derive", failed=True, finished_at=now - timedelta(seconds=600))  # before
    JobFactory(type="brain.derive", cancelled=True)
    JobFactory(type="repository.ingest", error="RuntimeError: boom", attempts=1)  # a retry, not failed

    figures = metrics.measure(now)

    assert {queue: figures.failed[queue] for queue in ("ai", "default", "ingestion")} == {
        "ai": 1,
        "default": 0,
        "ingestion": 1,
    }
    assert (figures.total_failed, figures.failed_window) == (2, 300.0)


def test_measure__reads_only_the_newest_failed_rows(monkeypatch):
    monkeypatch.setattr(metrics, "FAILED_SCAN_LIMIT", 2)
    JobFactory.create_batch(3, type="repository.ingest", failed=True)
    assert metrics.measure().failed["ingestion"] == 2


def test_metric_data__reports_every_figure_overall_and_per_queue():
    now = timezone.now()
    _ages(now)

    data = metrics.metric_data(metrics.measure(now))

    def value(name: str, queue: str | None = None) -> tuple[float, str]:
        (entry,) = [
            d
            for d in data
            if d["MetricName"] == name
            and d.get("Dimensions", []) == ([{"Name": "Queue", "Value": queue}] if queue else [])
        ]
        return entry["Value"], entry["Unit"]

    assert value("OldestDueJobAge") == (90.0, "Seconds")
    assert value("OldestDueJobAge", "ai") == (10.0, "Seconds")
    assert value("RunningJobs", "default") == (1.0, "Count")
    assert value("FailedJobs") == (0.0, "Count")
    assert value("QueuedJobs", "ingestion") == (2.0, "Count")


def test_report__without_a_namespace_only_logs(settings, caplog):
    settings.JOBS_CLOUDWATCH_NAMESPACE = ""
    settings.JOBS_AWS_ENDPOINT_URL = "http://127.0.0.1:9"  # nothing listens: a call would fail
    _backlog()
    with caplog.at_level(logging.INFO, logger="jobs.metrics"):
        line = metrics.report_backlog()
    assert "backlog per task 8.00" in line and "CloudWatch" not in line
    assert "backlog per task 8.00" in caplog.text


def test_report__puts_the_metric_to_cloudwatch(settings, moto_reset):
    settings.JOBS_CLOUDWATCH_NAMESPACE = NAMESPACE
    settings.JOBS_AWS_ENDPOINT_URL = moto_reset
    settings.JOBS_AWS_REGION = "eu-central-1"
    _backlog()
    JobFactory(type="brain.derive", failed=True)
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
    assert maximum("RunningJobs") == 1.0
    assert maximum("RunningJobs", Queue="default") == 1.0
    assert maximum("FailedJobs") == 1.0
    assert maximum("FailedJobs", Queue="ai") == 1.0
    assert maximum("FailedJobs", Queue="ingestion") == 0.0
    assert maximum("OldestDueJobAge", Queue="ingestion") >= 0.0

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


def _statement_timeout() -> str:
    """The session's statement timeout: PostgreSQL's statement_timeout, MariaDB's
    max_statement_time (seconds)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@SESSION.max_statement_time" if on_mariadb() else "SHOW statement_timeout")
        return str(cursor.fetchone()[0])


def _isolation_level() -> str:
    """The isolation level of the transaction under way (MariaDB: InnoDB's own record of it)."""
    with connection.cursor() as cursor:
        if on_mariadb():
            cursor.execute(
                "SELECT trx_isolation_level FROM information_schema.INNODB_TRX"
                " WHERE trx_mysql_thread_id = CONNECTION_ID()"
            )
        else:
            cursor.execute("SHOW transaction_isolation")
        return str(cursor.fetchone()[0]).replace("-", " ").lower()


@pytest.mark.django_db(transaction=True)
def test_measure__keeps_its_statement_timeout_to_its_own_transaction(monkeypatch):
    before = _statement_timeout()
    seen = {}
    live_worker_queues = metrics.live_worker_queues

    def look(*args, **kwargs):  # the last read of the measurement, inside its transaction
        seen["timeout"] = _statement_timeout()
        seen["in a transaction"] = connection.in_atomic_block
        return live_worker_queues(*args, **kwargs)

    monkeypatch.setattr(metrics, "live_worker_queues", look)
    metrics.measure()

    assert seen == {"timeout": "5.0" if on_mariadb() else "5s", "in a transaction": True}
    assert _statement_timeout() == before


@pytest.mark.django_db(transaction=True)
def test_measure__reads_one_snapshot(monkeypatch):
    """Its statements read one REPEATABLE READ snapshot: a job claimed between them is not
    seen twice (due, then running)."""
    _backlog()
    live_worker_queues = metrics.live_worker_queues
    seen = {}

    def look(*args, **kwargs):
        seen["isolation"] = _isolation_level()
        return live_worker_queues(*args, **kwargs)

    monkeypatch.setattr(metrics, "live_worker_queues", look)
    metrics.measure()

    assert seen == {"isolation": "repeatable read"}
