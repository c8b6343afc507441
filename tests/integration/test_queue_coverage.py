"""Queues nobody serves: due jobs in a queue that no live worker's lanes name are found from
the jobs table and the worker registry, and reported by ``manage.py check``, ``sweep``, the
metrics and the "Background jobs" page. Real workers: tests/browser/test_unserved_queue.py."""

from __future__ import annotations

import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.db import OperationalError, connection
from django.utils import timezone

from jobs import checks, coverage, metrics
from jobs.models import Worker
from jobs.timers import run_timer
from tests.admin_jobs import PAGE, make_viewer
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


def _worker(name: str, *lanes: str, seen_ago: float = 0, stopped: bool = False) -> Worker:
    now = timezone.now()
    return Worker.objects.create(
        name=name,
        host="h",
        pid=1,
        queues=list(lanes),
        last_seen=now - timedelta(seconds=seen_ago),
        stopped_at=now if stopped else None,
    )


def _ai_waits(seconds: float = 300, count: int = 3) -> None:
    """``count`` due jobs of the ai queue, the oldest due ``seconds`` ago."""
    now = timezone.now()
    JobFactory(type="test.ai", run_at=now - timedelta(seconds=seconds))
    JobFactory.create_batch(count - 1, type="test.ai", run_at=now)


def _state(queue: str) -> coverage.QueueState:
    (state,) = [state for state in coverage.queue_states() if state.queue == queue]
    return state


def test_queue_states__a_queue_with_due_jobs_and_no_worker_for_it_is_unserved():
    _ai_waits()
    JobFactory.create_batch(2, type="test.noop")
    JobFactory(type="test.noop", running=True)
    _worker("w1", "default:2")

    states = coverage.queue_states()

    assert [state.queue for state in coverage.unserved(states)] == ["ai"]
    ai = _state("ai")
    assert (ai.due, ai.running, ai.serving) == (3, 0, 0)
    assert 300 <= ai.oldest_due_age < 400
    assert ai.warning == "No live worker serves the queue 'ai': 3 due jobs, the oldest waiting 5 min."
    default = _state("default")
    assert (default.due, default.running, default.serving, default.unserved) == (2, 1, 1, False)


@pytest.mark.parametrize(
    "lanes",
    [["ai:1"], ["default,ai:2"], ["default:1", "ai:1"], []],
    ids=["its-own-lane", "a-lane-of-several", "one-of-two-lanes", "labels-unknown-so-every-queue"],
)
def test_queue_states__a_live_worker_whose_lanes_name_the_queue_serves_it(lanes):
    _ai_waits()
    _worker("w1", *lanes)
    assert _state("ai").serving == 1
    assert coverage.unserved(coverage.queue_states()) == []


@pytest.mark.parametrize(
    "worker",
    [{"seen_ago": 600}, {"stopped": True}],
    ids=["silent-past-its-lease", "stopped"],
)
def test_queue_states__a_worker_that_is_not_live_serves_nothing(settings, worker):
    settings.JOBS_WORKER_LEASE = 60
    _ai_waits()
    _worker("gone", "ai:1", **worker)
    assert _state("ai").unserved


def test_queue_states__jobs_not_due_yet_need_no_worker():
    JobFactory(type="test.ai", run_at=timezone.now() + timedelta(minutes=5))
    JobFactory(type="test.ai", running=True, locked_by="a-worker-that-is-gone")
    assert not _state("ai").unserved


def test_check__warns_about_each_unserved_queue_where_a_database_is_named():
    _ai_waits()
    _worker("w1", "default:2")

    messages = run_checks(databases=["default"])

    assert checks.UNSERVED_QUEUE not in {message.id for message in run_checks()}  # no database named

    (warning,) = [message for message in messages if message.id == checks.UNSERVED_QUEUE]
    assert warning.is_serious() is False  # a warning: nothing stops
    assert warning.msg.startswith("No live worker serves the queue 'ai': 3 due jobs")
    assert "runworker --queue ai:1" in warning.hint
    out = StringIO()
    call_command("check", "--database", "default", stderr=out, stdout=out)
    assert "platform.W001" in out.getvalue() and "'ai'" in out.getvalue()


def test_check__says_nothing_once_the_queue_is_served():
    _ai_waits()
    _worker("w1", "default:2")
    _worker("w2", "ai:1")
    assert checks.check_queues_are_served(databases=["default"]) == []


@pytest.mark.django_db(transaction=True)
def test_check__says_nothing_before_the_tables_exist():
    """As during ``migrate`` of a fresh database. MariaDB commits around DDL, so the table is
    renamed back by the test itself, and the test's rows are flushed after it."""
    _ai_waits()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE jobs_worker RENAME TO jobs_worker_not_yet")
        try:
            assert checks.check_queues_are_served(databases=["default"]) == []
        finally:
            cursor.execute("ALTER TABLE jobs_worker_not_yet RENAME TO jobs_worker")


def test_check__says_nothing_when_the_database_cannot_be_reached(monkeypatch):
    def unreachable(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection.introspection, "table_names", unreachable)
    assert checks.check_queues_are_served(databases=["default"]) == []


def test_sweep__logs_a_warning_for_each_unserved_queue(caplog):
    _ai_waits()
    _worker("w1", "default:2")

    with caplog.at_level(logging.WARNING, logger="jobs.coverage"):
        results = run_timer("sweep")

    line = results["jobs.tasks.warn_about_unserved_queues"]
    assert line == "no live worker serves ai (3 due, oldest waiting 5 min)"
    assert "No live worker serves the queue 'ai'" in caplog.text


def test_sweep__says_so_when_every_queue_is_served():
    assert coverage.report_unserved() == "every queue with due jobs has a live worker"


def test_metrics__count_due_jobs_nobody_serves_overall_and_per_queue():
    _ai_waits()
    JobFactory.create_batch(2, type="test.noop")
    _worker("w1", "default:2")

    figures = metrics.measure()
    data = {
        (datum["MetricName"], tuple(d["Value"] for d in datum.get("Dimensions", []))): datum["Value"]
        for datum in metrics.metric_data(figures)
    }

    assert (figures.unserved("ai"), figures.unserved("default"), figures.total_unserved) == (3, 0, 3)
    assert data[(metrics.UNSERVED_JOBS, ())] == 3
    assert data[(metrics.UNSERVED_JOBS, ("ai",))] == 3
    assert data[(metrics.UNSERVED_JOBS, ("default",))] == 0


def test_page__warns_above_the_tiles_and_lists_every_queue(client):
    _ai_waits()
    JobFactory.create_batch(2, type="test.noop")
    _worker("w1", "default:2")
    client.force_login(make_viewer())

    page = client.get(PAGE).content.decode()

    warnings = page.index('class="job-unserved" data-queue="ai"')
    assert warnings < page.index('id="job-tiles"')
    assert "No live worker serves the queue &#x27;ai&#x27;: 3 due jobs, the oldest waiting 5 min." in page
    assert 'data-queue="default"' in page and 'class="job-unserved" data-queue="default"' not in page
    refresh = client.get(PAGE, headers={"X-Jobs-Refresh": "1"}).content.decode()
    assert 'class="job-unserved" data-queue="ai"' in refresh


def test_page__shows_no_warning_while_every_queue_is_served(client):
    _ai_waits()
    _worker("w1", "ai,default:2")
    client.force_login(make_viewer())

    page = client.get(PAGE).content.decode()

    assert 'class="job-unserved"' not in page
    assert 'class="job-queue-line" data-queue="ai"' in page
