"""Flow control in headless Chromium, as an operator uses it: Pause on the Background jobs
page's queue line, the queue shown paused there and on the flow-control page, the queue's
limits set from the flow-control page (the types' limits shown read-only beside them), and
Resume; every change in the admin log. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

from jobs import registry, store
from jobs.flow import admission
from jobs.models import Queue
from tests.admin_jobs import make_user
from tests.browser import test_admin_browser
from tests.browser.test_admin_browser import log_in, screenshot

browser = test_admin_browser.browser  # the page's Chromium fixture, shared with its other tests

pytestmark = [
    pytest.mark.browser,  # skipped without Chromium, failed in CI (tests/support/chromium.py)
    pytest.mark.django_db(transaction=True),  # the live server sees committed rows
]

JOBS = "/admin/platform/job/"
FLOW = "/admin/platform/queue/"


def test_flow_control__pause_limit_and_resume_a_queue_from_the_pages(browser, live_server) -> None:
    make_user("operator", "view_jobs", "change_queue")
    store.enqueue_many("test.limited_queue", [{} for _ in range(3)])
    store.enqueue_many("test.flow_key", [{"account": 1}, {"account": 1}, {"account": 2}])
    store.claim_flowed("w", ["default"], 10, admission.Rules({}, registry.limits_of), keyed_only=True)
    page = log_in(browser, live_server, "operator", next_url=JOBS, waits_for=JOBS)

    line = page.locator('.job-queue-line[data-queue="limited"]')
    line.locator("button.job-queue-action--pause").click()
    page.wait_for_selector(".messagelist .success")
    assert "Queue limited: paused." in page.locator(".messagelist").inner_text()
    assert "paused" in page.locator('.job-queue-line[data-queue="limited"]').inner_text()
    assert "is paused: 3 due jobs wait until it is resumed" in page.locator(".job-paused").inner_text()
    assert Queue.objects.get(queue="limited").paused

    page.locator('.job-paused a:has-text("Flow control")').click()
    page.wait_for_selector("#flow-queues")
    row = page.locator('#flow-queues tr[data-queue="limited"]')
    assert "paused" in row.locator(".flow-state-cell").inner_text()
    row.locator('input[name="concurrency"]').fill("3")
    row.locator('input[name="rate"]').fill("10/s")
    row.locator("button.flow-save").click()
    page.wait_for_selector(".messagelist .success")
    row = page.locator('#flow-queues tr[data-queue="limited"]')
    assert "at most 3 running, 10 a second starts" in row.locator(".flow-limits").inner_text()
    assert "from an operator" in row.locator(".flow-limits").inner_text()
    assert row.locator(".flow-waiting").inner_text() == "0"  # paused, not held by a limit
    assert "Limits: at most 3 running" in row.locator(".flow-change").inner_text()
    keyed = page.locator('#flow-types tr[data-type="test.flow_key"]')
    assert "2 keys running, 2 at the limit" in keyed.inner_text()
    assert keyed.locator(".flow-waiting").inner_text() == "1"  # account 1's second job
    assert keyed.locator("input, button").count() == 0  # a type's limits are its code's
    screenshot(page, "admin_flow_control.png")

    row.locator("button.flow-action--resume").click()
    page.wait_for_selector(".messagelist .success")
    assert page.locator('#flow-queues tr[data-queue="limited"] .flow-state-cell').inner_text().strip() == "on"
    assert not page.csp_violations
    assert [entry.get_change_message() for entry in LogEntry.objects.order_by("action_time")] == [
        "Paused",
        "Limits: at most 3 running, 10 a second starts",
        "Resumed",
    ]
