"""The Timers page in headless Chromium, as an operator uses it: Pause and Resume change a
timer's state on the page and in the admin log; Run now queues a slot of its own, a real
worker runs it, and its row shows the run with a link to its job. A viewer sees no buttons.
Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

from jobs.models import Timer, TimerSlot
from tests.admin_jobs import make_user, make_viewer
from tests.browser import test_admin_browser
from tests.browser.test_admin_browser import log_in, screenshot
from tests.support.waiting import wait_for

browser = test_admin_browser.browser  # the page's Chromium fixture, shared with its other tests

pytestmark = [
    pytest.mark.browser,  # skipped without Chromium, failed in CI (tests/support/chromium.py)
    pytest.mark.django_db(transaction=True),  # the live server and the worker see committed rows
]

PAGE = "/admin/platform/timer/"


def _row(page, name: str):
    return page.locator("#result_list tbody tr", has=page.locator(f'button[data-timer="{name}"]'))


def test_timers_page__pause_resume_and_run_now_from_the_page(browser, live_server, start_worker) -> None:
    make_user("operator", "view_jobs", "change_timer")
    page = log_in(browser, live_server, "operator", next_url=PAGE, waits_for=PAGE)
    reconcile = Timer.objects.get(name="reconcile")
    row = _row(page, "reconcile")
    assert "every 15 minutes" in row.inner_text() and "on" in row.inner_text()

    row.locator("button.timer-action--pause").click()
    page.wait_for_selector(".messagelist .success")
    assert "Timer reconcile is paused" in page.locator(".messagelist").inner_text()
    assert "paused" in _row(page, "reconcile").inner_text()
    assert Timer.objects.get(pk=reconcile.pk).enabled is False

    _row(page, "reconcile").locator("button.timer-action--resume").click()
    page.wait_for_selector(".messagelist .success")
    assert "Timer reconcile is resumed" in page.locator(".messagelist").inner_text()
    assert Timer.objects.get(pk=reconcile.pk).enabled is True

    _row(page, "reconcile").locator("button.timer-action--run").click()
    page.wait_for_selector(".messagelist .success")
    (manual,) = TimerSlot.objects.filter(timer=reconcile, kind="manual")
    assert f"job #{manual.job_id}" in page.locator(".messagelist").inner_text()
    start_worker("--burst", "--no-schedules")  # runs the queued run, books no slot itself
    wait_for(
        lambda: TimerSlot.objects.get(pk=manual.pk).outcome == TimerSlot.Outcome.SUCCEEDED,
        timeout=60,
        message="the worker to run the manual slot",
    )
    page.reload()
    last = _row(page, "reconcile").inner_text()
    assert "succeeded" in last and f"job #{manual.job_id}" in last and "by operator" in last
    assert not page.csp_violations
    screenshot(page, "admin_timers.png")
    assert [entry.get_change_message() for entry in LogEntry.objects.order_by("action_time")] == [
        "Paused",
        "Resumed",
        f"Run now (job #{manual.job_id})",
    ]

    make_viewer()
    viewer = log_in(browser, live_server, "viewer", next_url=PAGE, waits_for=PAGE)
    assert viewer.locator("button.timer-action--run").count() == 0
    assert "every 15 minutes" in viewer.locator("#result_list").inner_text()
