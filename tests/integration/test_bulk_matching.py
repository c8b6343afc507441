"""Retry all / Dismiss all matching (``jobs.bulk``, ``jobs.admin.bulk_page``): a confirmation
that names N, the engine's own job doing it in batches with its progress, the admin log
saying who and which filter, the change permission required. The outage test retries
50,000 failed jobs, running the bulk job in this process (``jobs.testing``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from jobs import bulk, testing
from jobs.models import Job, Status, TryLog
from tests.admin_jobs import PAGE, make_operator, make_viewer

pytestmark = pytest.mark.django_db

MATCHING = f"{PAGE}matching/"


def _failed(count: int, error: str, type_name: str = "test.fail", finished_at=None) -> None:
    now = finished_at or timezone.now()
    rows = [
        Job(type=type_name, queue="default", status=Status.FAILED, payload={"n": n}, attempts=3, max_attempts=3,
            error=error, started_at=now, finished_at=now, run_at=now)
        for n in range(count)
    ]  # fmt: skip
    Job.objects.bulk_create(rows, batch_size=5000)


def test_retry_all_matching_after_an_outage__fifty_thousand_jobs_in_batches(client):
    _failed(50_000, "ConnectionError: database outage")
    _failed(10, "ValueError: a real bug")
    some = Job.objects.filter(error__contains="outage").order_by("pk").first()
    TryLog.objects.create(job=some, attempt=3, text="a line before the outage", lines=1)
    client.force_login(make_operator())

    confirm = client.get(MATCHING, {"action": "retry", "error": "outage"}).content.decode()
    assert "Retry all 50,000 matching" in confirm and "error contains &#x27;outage&#x27;" in confirm
    response = client.post(MATCHING, {"action": "retry", "error": "outage"})

    started = Job.objects.get(type=bulk.TYPE)
    assert response.status_code == 302 and response["Location"].endswith(f"{PAGE}{started.pk}/change/")
    entry = LogEntry.objects.get(object_id=str(started.pk))
    assert entry.user.username == "operator"
    assert entry.get_change_message() == "Retry all 50,000 matching: error contains 'outage'"
    assert Job.objects.filter(status=Status.FAILED).count() == 50_010  # nothing changed yet

    done = testing.run_job(started)

    assert done.status == Status.SUCCEEDED
    assert done.progress_message == "50,000 of 50,000 queued again (by operator)"
    retried = Job.objects.filter(error="", status=Status.QUEUED, type="test.fail")
    assert retried.count() == 50_000
    assert set(retried.values_list("attempts", "earlier_attempts").distinct()) == {(0, 3)}
    assert Job.objects.filter(status=Status.FAILED, error__contains="real bug").count() == 10
    assert TryLog.objects.get(job=some).earlier == 0  # the log keeps its try's number, 3


def test_dismiss_all_matching_narrowed_by_type_and_time(client):
    long_ago = timezone.now() - timedelta(days=2)
    _failed(5, "E: old", finished_at=long_ago)
    _failed(3, "E: new")
    _failed(2, "E: new", type_name="test.flaky")
    client.force_login(make_operator())
    since = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")

    confirm = client.get(MATCHING, {"action": "dismiss", "type": "test.fail", "failed_from": since})
    assert "Dismiss all 3 matching" in confirm.content.decode()
    client.post(MATCHING, {"action": "dismiss", "type": "test.fail", "failed_from": since})
    testing.run_job(Job.objects.get(type=bulk.TYPE))

    dismissed = Job.objects.filter(dismissed_at__isnull=False)
    assert dismissed.count() == 3 and set(dismissed.values_list("type", flat=True)) == {"test.fail"}


def test_bulk_actions_need_the_change_permission_and_known_filters(client):
    _failed(2, "E")
    client.force_login(make_viewer())
    assert client.get(MATCHING, {"action": "retry"}).status_code == 403
    assert client.post(MATCHING, {"action": "retry"}).status_code == 403
    client.force_login(make_operator())
    refused = client.get(MATCHING, {"action": "retry", "queue": "no-such-queue"})
    assert refused.status_code == 302 and not Job.objects.filter(type=bulk.TYPE).exists()
    assert client.get(MATCHING, {"action": "explode"}).status_code == 302
    assert client.get(MATCHING, {"action": "retry", "error": "x" * 201}).status_code == 302


def test_the_failed_list_offers_the_bulk_bar_to_operators_only(client):
    _failed(1, "E")
    client.force_login(make_operator())
    assert 'id="job-bulk-bar"' in client.get(PAGE, {"status": "failed", "queue": "default"}).content.decode()
    assert 'id="job-bulk-bar"' not in client.get(PAGE).content.decode()
    client.force_login(make_viewer())
    assert 'id="job-bulk-bar"' not in client.get(PAGE, {"status": "failed"}).content.decode()
