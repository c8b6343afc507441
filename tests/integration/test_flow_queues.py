"""A paused queue as the engine reports it (not unserved: the check, the sweep's metrics and
Prometheus), and ``manage.py jobs_queue`` (pause, resume, limits, show), which changes the
same rows as the page and the API."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

import jobs
from jobs import checks, coverage, metrics
from jobs.flow import queues
from jobs.models import Queue
from tests.factories import JobFactory
from tests.integration.test_prometheus_endpoint import TOKEN, by_queue, scrape

pytestmark = pytest.mark.django_db


def test_a_paused_queue__is_reported_paused_and_not_unserved(client, settings):
    JobFactory.create_batch(2, type="test.ai")  # due, and no worker serves ai
    assert [m.id for m in checks.check_queues_are_served(databases=["default"])] == [checks.UNSERVED_QUEUE]

    jobs.pause_queue("ai")

    assert checks.check_queues_are_served(databases=["default"]) == []
    (ai,) = [state for state in coverage.queue_states() if state.queue == "ai"]
    assert (ai.paused, ai.unserved, ai.due) == (True, False, 2)
    assert metrics.measure().unserved("ai") == 0
    assert "no live worker serves ai" not in coverage.report_unserved()
    settings.JOBS_METRICS_TOKEN = TOKEN
    parsed = scrape(client)
    assert by_queue(parsed, "jobs_queue_paused")["ai"] == 1.0
    assert by_queue(parsed, "jobs_unserved_due")["ai"] == 0.0


def _run(*args: str) -> str:
    out = StringIO()
    call_command("jobs_queue", *args, stdout=out)
    return out.getvalue()


def test_jobs_queue_command__pauses_limits_shows_and_resumes(settings):
    settings.JOBS_QUEUES = {"mail": {"concurrency": 2}}
    assert "paused" in _run("pause", "ai")
    assert _run("limits", "ai", "--concurrency", "4", "--rate", "100/m") == (
        "ai: paused, at most 4 running, 100 a minute starts (from operator)\n"
    )
    shown = _run("show")
    assert "mail: at most 2 running (from settings)" in shown
    assert "ai: paused, at most 4 running, 100 a minute starts (from operator)" in shown
    _run("limits", "ai", "--reset")
    _run("resume", "ai")
    row = Queue.objects.get(queue="ai")
    assert (row.paused, row.limits_set) == (False, False)
    assert queues.current()["ai"].describe() == "no limits"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("limits", "ai", "--rate", "lots"), "must read like '60/m'"),
        (("limits", "ai", "--concurrency", "0"), "whole number from 1"),
        (("pause", "a,b"), "is not a queue name"),
    ],
)
def test_jobs_queue_command__refuses_bad_input_with_the_engines_words(args, said):
    with pytest.raises(CommandError, match=said):
        _run(*args)
    assert not Queue.objects.filter(limits_set=True).exists()
