"""A queue nobody serves, with real workers: one runs only the default queue, a job waits in
ai, and the "Background jobs" page (headless Chromium) and ``manage.py check`` say so; a
worker for ai starts, and the warning goes from the page by itself while a job is still due
there. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from jobs import store
from jobs.models import Job, Status
from tests.admin_jobs import make_viewer
from tests.browser import test_admin_browser
from tests.browser.test_admin_browser import CHROMIUM, log_in, screenshot
from tests.support.job_states import wait_finished
from tests.support.waiting import wait_for
from tests.support.workers import wait_registered

browser = test_admin_browser.browser  # the page's Chromium fixture, shared with its other tests

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
    ),
    pytest.mark.django_db(transaction=True),  # the live server and the workers see committed rows
]


def _check() -> str:
    out = StringIO()
    call_command("check", "--database", "default", stdout=out, stderr=out)
    return out.getvalue()


def test_unserved_queue__warned_on_the_page_and_by_check_until_a_worker_serves_it(
    browser, live_server, start_worker, tmp_path
) -> None:
    make_viewer()
    start_worker("--queue", "default:1", "--name", "default-only")
    wait_registered("default-only")
    gate = tmp_path / "gate"
    held = store.enqueue("test.ai", {"gate": str(gate)})
    waiting = store.enqueue("test.ai", {})
    store.enqueue("test.noop", {})  # the default queue is served: no warning for it

    assert "platform.W001" in (before := _check()) and "queue 'ai': 2 due jobs" in before
    assert "'default'" not in before
    page = log_in(browser, live_server, "viewer")
    warning = page.locator('.job-unserved[data-queue="ai"]')
    assert "No live worker serves the queue 'ai': 2 due jobs, the oldest waiting" in warning.inner_text()
    assert page.locator(".job-unserved").count() == 1
    assert warning.bounding_box()["y"] < page.locator("#job-tiles").bounding_box()["y"]  # above the tiles
    ai_line = page.locator('.job-queue-line[data-queue="ai"]')
    assert "2 due · 0 running" in ai_line.inner_text() and "0 workers" in ai_line.inner_text()
    screenshot(page, "admin_jobs_unserved_queue.png")

    start_worker("--queue", "ai:1", "--name", "ai-worker")
    # One slot: the first ai job runs (held at its gate) and the second stays due, so it is
    # the worker now serving the queue, not an empty queue, that makes the warning go.
    wait_for(lambda: warning.count() == 0, 60, message="the warning to go on the page's own refresh")
    line = ai_line.inner_text()
    assert "1 worker" in line and not line.startswith("ai 0 due"), line
    assert Job.objects.get(pk=waiting.pk).status == Status.QUEUED
    wait_for(lambda: "1 due · 1 running" in ai_line.inner_text(), 30, message="the held ai job to run")
    assert "platform.W001" not in _check()
    screenshot(page, "admin_jobs_queue_served.png")

    gate.touch()
    wait_finished([held.pk, waiting.pk], timeout=60)
