"""The rollup of finished tries (``jobs.rollup``) and what reads it: written once per
acknowledgement batch, summed per outcome and minute, its percentiles within the buckets'
error, the charts on the page, the Prometheus histograms, the depth samples, and pruning."""

from __future__ import annotations

import math
import random
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import rollup, store, testing
from jobs.admin import charts
from jobs.models import Job, JobAttempt, QueueDepth, Rollup, Status, TryLog
from jobs.rollup import Finished
from tests.admin_jobs import PAGE, make_viewer
from tests.integration.test_prometheus_endpoint import scrape

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_charts():
    charts.clear_cache()
    yield
    charts.clear_cache()


def test_an_acknowledgement_batch_adds_one_statement_whatever_its_size():
    for count in (1, 20):
        ids = [store.enqueue("test.noop", {"n": n}).pk for n in range(count)]
        claimed = store.claim("w1", ["default"], count)
        with CaptureQueriesContext(connection) as queries:
            store.complete("w1", [(job.id, job.attempt) for job in claimed])
        assert sum("jobs_rollup" in query["sql"] for query in queries.captured_queries) == 1
        assert Job.objects.filter(pk__in=ids, status=Status.SUCCEEDED).count() == count
    last = rollup.series(rollup.HOUR)[-1]
    assert last.outcomes[rollup.SUCCEEDED] == 21
    assert last.tries == 21 and last.run[0] is not None and last.wait[0] is not None


def test_outcomes_are_counted_as_tries_end_succeeded_retried_and_failed():
    testing.perform("test.noop")
    job = store.enqueue("test.flaky", {"fail_times": 5})  # three attempts: two retried, one failed
    for _ in range(3):
        Job.objects.filter(pk=job.pk).update(run_at=timezone.now() - timedelta(seconds=1))
        testing.run_job(job.pk)
    day = rollup.series(rollup.DAY)[-1]
    hour = rollup.series(rollup.HOUR)[-1]
    for point in (day, hour):
        assert (
            point.outcomes[rollup.SUCCEEDED],
            point.outcomes[rollup.RETRIED],
            point.outcomes[rollup.FAILED],
        ) == (
            1,
            2,
            1,
        )
    assert rollup.series(rollup.HOUR, queue="mail")[-1].outcomes == {}


def test_percentiles_from_the_buckets_are_within_their_error_of_the_true_values():
    spread = random.Random(7)
    runs = [math.exp(spread.gauss(math.log(0.2), 1.0)) for _ in range(2000)]
    rollup.record([Finished("default", "test.noop", rollup.SUCCEEDED, run / 10, run) for run in runs])
    point = rollup.series(rollup.HOUR)[-1]
    ordered = sorted(runs)
    for estimate, fraction in zip(point.run, rollup.FRACTIONS, strict=True):
        true = ordered[math.ceil(fraction * len(ordered)) - 1]
        assert estimate == pytest.approx(true, rel=0.0905)
    assert point.wait[0] == pytest.approx(ordered[999] / 10, rel=0.0905)


def test_the_page_draws_the_charts_with_their_numbers_in_titles(client):
    rollup.record([Finished("default", "test.noop", rollup.SUCCEEDED, 0.01, 0.5)] * 7)
    rollup.record([Finished("mail", "test.noop", rollup.FAILED, 0.01, 0.5)] * 2)
    QueueDepth.objects.create(minute=rollup.span_start(timezone.now(), 1), queue="default", due=12, running=3)
    client.force_login(make_viewer())

    page = client.get(PAGE).content.decode()
    assert page.count('<svg class="chart-svg"') == 8  # four charts, two windows
    assert re.search(r"<title>\d\d:\d\d: 7 succeeded, 0 retried, 2 failed</title>", page)
    assert "12 due, 3 running" in page and "p50 " in page
    assert (
        "style="
        not in page[page.index('id="job-charts"') : page.index("</details>", page.index('id="job-charts"'))]
    )

    charts.clear_cache()
    mail = client.get(f"{PAGE}?queue=mail").content.decode()
    assert "queue <strong>mail</strong>" in mail
    assert re.search(r"<title>\d\d:\d\d: 0 succeeded, 0 retried, 2 failed</title>", mail)
    refresh = client.get(PAGE, headers={"X-Jobs-Refresh": "1"}).content.decode()
    assert 'id="job-charts"' in refresh


def test_prometheus_has_the_finished_counts_and_the_wait_and_run_histograms(client, settings):
    settings.JOBS_METRICS_TOKEN = "t" * 32
    settings.JOBS_METRICS_ALLOWED_IPS = []
    rollup.record([Finished("default", "test.noop", rollup.SUCCEEDED, 0.002, 0.3)] * 4)
    rollup.record([Finished("default", "test.noop", rollup.RETRIED, 0.002, 3.0)])

    scraped = scrape(client, "t" * 32)

    assert scraped["jobs_finished_recent"][(("outcome", "succeeded"), ("queue", "default"))] == 4
    run = scraped["jobs_run_seconds_bucket"]
    assert run[(("le", "0.256"), ("queue", "default"))] == 0
    assert run[(("le", "1.024"), ("queue", "default"))] == 4
    assert run[(("le", "+Inf"), ("queue", "default"))] == 5
    assert scraped["jobs_wait_seconds_bucket"][(("le", "0.004"), ("queue", "default"))] == 5


def test_one_worker_a_minute_samples_the_depth():
    store.enqueue("test.noop", {})
    now = timezone.now()
    assert rollup.sample_depth(now) is True
    assert rollup.sample_depth(now) is False  # the minute is booked
    sample = QueueDepth.objects.get(queue="default")
    assert (sample.due, sample.running) == (1, 0)


def test_prune_removes_old_rollup_rows_and_the_logs_go_with_their_jobs(settings):
    settings.JOBS_ROLLUP_KEEP_DAYS = 2
    old = timezone.now() - timedelta(days=3)
    Rollup.objects.create(
        span=1, minute=old, queue="q", type="t", outcome="succeeded", measure="r", bucket=1, tries=1
    )
    rollup.record([Finished("q", "t", rollup.SUCCEEDED, 0.1, 0.1)])
    job = testing.perform("test.noop")
    store.save_try_logs([(job.pk, 1, rollup_log())])
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(days=30))

    store.prune()

    assert not Rollup.objects.filter(minute__lt=timezone.now() - timedelta(days=2)).exists()
    assert Rollup.objects.exists()
    assert not TryLog.objects.exists()


def test_a_retry_keeps_the_earlier_tries_logs_under_their_numbers(client):
    job = store.enqueue("test.flaky", {"fail_times": 9})
    for attempt in (1, 2, 3):
        Job.objects.filter(pk=job.pk).update(run_at=timezone.now() - timedelta(seconds=1))
        testing.run_job(job.pk)
        store.save_try_logs([(job.pk, attempt, rollup_log(f"round one try {attempt}"))])
    store.retry(job.pk)
    testing.run_job(job.pk)
    store.save_try_logs([(job.pk, 1, rollup_log("round two try 1"))])

    client.force_login(make_viewer())
    page = client.get(f"{PAGE}{job.pk}/change/").content.decode()
    assert (
        "round one try 3" in page[page.index('id="attempt-') : page.index('id="job-try-logs"')]
    )  # beside its error
    page = page[page.index('id="job-try-logs"') :]
    assert page.index('id="try-log-3"') < page.index("round one try 3") < page.index('id="try-log-4"')
    assert page.index('id="try-log-4"') < page.index("round two try 1")
    assert TryLog.objects.filter(job_id=job.pk).count() == 4
    third = JobAttempt.objects.get(job_id=job.pk, attempt=3)  # the try's own page too
    assert "round one try 3" in client.get(f"/admin/platform/jobattempt/{third.pk}/change/").content.decode()


def rollup_log(text: str = "a line"):
    from jobs.try_log import Log

    return Log(text, 1, "")
