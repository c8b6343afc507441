"""The Prometheus endpoint: off by default, guarded by a token or an address allowlist, and
scraped through Django's test client, its text parsed by prometheus_client's own parser."""

from __future__ import annotations

import ipaddress
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from jobs import metrics
from jobs.models import Worker
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-scrape-token"


@pytest.fixture
def token(settings) -> str:
    settings.JOBS_METRICS_TOKEN = TOKEN
    settings.JOBS_METRICS_ALLOWED_IPS = []
    return TOKEN


def scrape(client, token: str = TOKEN, **extra) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """GET /metrics; returns {metric name: {sorted labels: value}} from the parsed exposition."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    parsed: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        assert family.type in ("gauge", "gaugehistogram", "histogram"), family.name
        for sample in family.samples:
            parsed.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return parsed


def by_queue(parsed, name: str) -> dict[str, float]:
    return {dict(labels)["queue"]: value for labels, value in parsed[name].items()}


def _scene() -> None:
    now = timezone.now()
    JobFactory.create_batch(3, type="repository.ingest", run_at=now - timedelta(seconds=120))
    JobFactory(type="brain.derive", run_at=now + timedelta(minutes=5))  # not due yet
    JobFactory.create_batch(2, type="brain.derive", running=True)
    JobFactory(type="repository.ingest", failed=True)
    JobFactory(type="repository.ingest", failed=True, finished_at=now - timedelta(days=1))
    Worker.objects.create(name="w1", host="h", pid=1, queues=["ai,default,ingestion:2"], last_seen=now)
    Worker.objects.create(name="w2", host="h", pid=2, queues=["ingestion:1"], last_seen=now)


def test_endpoint__is_off_by_default(client, settings):
    settings.JOBS_METRICS_TOKEN = ""
    settings.JOBS_METRICS_ALLOWED_IPS = []
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404


def test_endpoint__refuses_a_scrape_without_the_right_token(client, token):
    assert client.get("/metrics").status_code == 401
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_endpoint__serves_only_allowed_addresses(client, settings):
    settings.JOBS_METRICS_TOKEN = ""
    settings.JOBS_METRICS_ALLOWED_IPS = [ipaddress.ip_network("10.1.0.0/16")]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_endpoint__reads_an_allowlist_written_as_text(client, settings):
    # A project's settings module may list plain strings, as for ALLOWED_HOSTS.
    settings.JOBS_METRICS_TOKEN = ""
    settings.JOBS_METRICS_ALLOWED_IPS = ["10.1.0.0/16", "127.0.0.1"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403


def test_endpoint__with_both_settings_needs_both(client, token, settings):
    settings.JOBS_METRICS_ALLOWED_IPS = [ipaddress.ip_network("10.1.0.0/16")]
    assert (
        client.get("/metrics", REMOTE_ADDR="10.9.0.1", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code
        == 403
    )
    assert client.get("/metrics", REMOTE_ADDR="10.1.0.1").status_code == 401
    assert scrape(client, REMOTE_ADDR="10.1.0.1")["jobs_workers_live"]


def test_scrape__reports_the_figures_of_every_queue(client, token):
    _scene()

    parsed = scrape(client)

    due = by_queue(parsed, "jobs_due")
    assert (due["ingestion"], due["ai"], due["default"]) == (3, 0, 0)
    ages = by_queue(parsed, "jobs_oldest_due_age_seconds")
    assert ages["ingestion"] >= 120 and ages["ai"] == 0
    running = by_queue(parsed, "jobs_running")
    assert (running["ai"], running["ingestion"]) == (2, 0)
    failed = by_queue(parsed, "jobs_failed_recent")
    assert (failed["ingestion"], failed["ai"]) == (1, 0)  # the one from yesterday is outside the window
    assert parsed["jobs_workers_live"] == {(): 2.0}
    serving = by_queue(parsed, "jobs_workers_serving")
    assert (serving["ingestion"], serving["ai"]) == (2, 1)
    assert by_queue(parsed, "jobs_backlog_per_task")["ingestion"] == 1.5


def test_scrape__reports_due_jobs_of_a_queue_nobody_serves(client, token):
    _scene()  # the workers serve ai, default and ingestion: not mail
    JobFactory.create_batch(2, type="email.process", payload={"email_id": 1})

    unserved = by_queue(scrape(client), "jobs_unserved_due")

    assert (unserved["mail"], unserved["ingestion"], unserved["ai"]) == (2, 0, 0)


def test_scrape__measures_at_scrape_time(client, token):
    assert by_queue(scrape(client), "jobs_due")["ingestion"] == 0
    JobFactory.create_batch(4, type="repository.ingest")
    assert by_queue(scrape(client), "jobs_due")["ingestion"] == 4


def test_scrape__reports_the_same_numbers_as_cloudwatch_gets(client, token):
    _scene()
    parsed = scrape(client)
    figures = metrics.measure()
    for datum in metrics.metric_data(figures):
        queue = next((d["Value"] for d in datum.get("Dimensions", []) if d["Name"] == "Queue"), None)
        name = {
            "QueuedJobs": "jobs_due",
            "RunningJobs": "jobs_running",
            "FailedJobs": "jobs_failed_recent",
            "BacklogPerTask": "jobs_backlog_per_task",
            "UnservedJobs": "jobs_unserved_due",
        }.get(datum["MetricName"])
        if queue and name:
            assert by_queue(parsed, name)[queue] == datum["Value"], (name, queue)


def test_scrape__speaks_openmetrics_when_asked(client, token):
    response = client.get(
        "/metrics",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_ACCEPT="application/openmetrics-text; version=1.0.0",
    )
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.decode().rstrip().endswith("# EOF")
