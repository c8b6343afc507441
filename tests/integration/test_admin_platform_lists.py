"""The platform's own lists beside the jobs page: workers and failed tries read as an
operator needs them (queues as text, stopped workers filtered out, tracebacks indented)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from jobs.models import Worker
from tests.admin_jobs import make_failed, make_viewer

pytestmark = pytest.mark.django_db

WORKERS = "/admin/platform/worker/"


@pytest.fixture
def viewer_client(client: Client) -> Client:
    client.force_login(make_viewer())
    return client


def test_workers__queues_read_as_text_and_stopped_workers_can_be_filtered_out(viewer_client: Client) -> None:
    Worker.objects.create(name="live", host="a", pid=1, queues=["ai,default,mail:2"])
    Worker.objects.create(name="gone", host="b", pid=2, queues=["default"], stopped_at=timezone.now())

    every = viewer_client.get(WORKERS).text
    running = viewer_client.get(WORKERS, {"state": "running"}).text

    assert "ai, default, mail:2" in every and "[&quot;" not in every
    assert ">gone</a>" in every
    assert ">live</a>" in running and ">gone</a>" not in running


def test_failed_try__its_page_keeps_the_tracebacks_indentation(viewer_client: Client) -> None:
    job = make_failed(tries=1)
    attempt = job.failed_attempts.get()

    page = viewer_client.get(f"/admin/platform/jobattempt/{attempt.pk}/change/").text

    assert '<pre class="job-pre">Traceback (most recent call last):\n  File &quot;tasks.py&quot;' in page
