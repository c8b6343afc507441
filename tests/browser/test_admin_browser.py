"""The Background jobs page in a real headless Chromium (Debian's), against the live server.

A real ``manage.py runworker`` runs a job that reports progress; the page must show the
progress change by itself (no reload, scroll kept), stop refreshing once the system is
idle, and let an operator Retry a failed job. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connections

from jobs import store
from jobs.models import Job, Status
from tests.admin_jobs import PAGE, PASSWORD, make_failed, make_operator, make_viewer
from tests.support import chromium
from tests.support.chromium import CHROMIUM, record_csp_violations
from tests.support.paths import ARTIFACTS
from tests.support.waiting import wait_for

REFRESH_HEADER = "x-jobs-refresh"  # Playwright reports header names in lower case

pytestmark = [
    pytest.mark.browser,  # skipped without Chromium, failed in CI (tests/support/chromium.py)
    pytest.mark.django_db(transaction=True),  # the live server and the worker see committed rows
]


@pytest.fixture
def browser(monkeypatch) -> Iterator:
    """Chromium through Playwright; its sync API runs an event loop in this thread, which
    Django's async-safety check would otherwise refuse for ORM calls made by the test."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=chromium.ARGS)
        yield browser
        browser.close()
        # While Playwright's loop runs, the ORM keeps its connection in that context: close
        # it here, or the test database cannot be dropped at the end of the session.
        connections.close_all()


def log_in(
    browser,
    live_server,
    username: str,
    *,
    next_url: str = PAGE,
    height: int = 900,
    waits_for: str = PAGE,
    before=None,
):
    """A page logged in as ``username`` at ``next_url``; its Content-Security-Policy
    violations are collected in ``page.csp_violations``. ``before(page)`` runs before the
    first navigation (to install the page's clock, say)."""
    page = browser.new_page(viewport={"width": 1400, "height": height})
    page.set_default_timeout(20_000)
    page.csp_violations = record_csp_violations(page)
    if before is not None:
        before(page)
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{waits_for}**")
    return page


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_viewer__watches_progress_live_and_refreshing_stops_when_idle(
    browser, live_server, start_worker, tmp_path
) -> None:
    make_viewer()
    for _ in range(30):  # enough rows to scroll
        store.enqueue("test.noop", {})
    Job.objects.filter(type="test.noop").update(status=Status.SUCCEEDED, attempts=1)
    job = store.enqueue("test.progress", {"steps": 10, "pause": 0.8})
    refreshes: list[str] = []

    page = log_in(browser, live_server, "viewer", next_url=f"{PAGE}?queue=default", height=500)
    page.clock.install()  # the page's timers run on a clock the test can move (see the end)
    page.reload()
    page.on("request", lambda request: request.headers.get(REFRESH_HEADER) and refreshes.append(request.url))
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    assert page.locator("button.job-action").count() == 0  # a viewer gets no buttons
    assert page.get_attribute("#job-tiles", "data-active") == "1"  # a job is queued
    page.evaluate("window.scrollTo(0, 150)")
    worker = start_worker("--concurrency", "1", "--burst")

    progress = page.locator(f'#result_list tr:has(a[href*="/job/{job.pk}/change/"]) .job-percent')
    wait_for(
        lambda: progress.count() and progress.inner_text().strip() not in ("", "0 %"), 30, message="progress"
    )
    first = progress.inner_text()
    wait_for(
        lambda: progress.count() and progress.inner_text() not in (first, ""),
        30,
        message="progress to change",
    )
    screenshot(page, "admin_jobs_running.png")

    assert navigations == []  # swapped in place, never reloaded
    assert page.evaluate("window.scrollY") == 150
    assert all("queue=default" in url for url in refreshes)  # the filters are kept
    assert worker.wait(60) == 0  # --burst: the queue is drained
    wait_for(lambda: page.get_attribute("#job-tiles", "data-active") == "0", 15, message="page to go idle")
    assert "Idle" in page.inner_text("#job-live")
    assert Job.objects.get(pk=job.pk).status == Status.SUCCEEDED
    # No refresh is scheduled any more: the page's clock runs three refresh intervals at
    # once, firing every timer due in them, and any refresh would call fetch, counted here.
    page.evaluate(COUNT_FETCHES)
    page.clock.run_for(10_000)
    assert page.evaluate("window.fetches") == 0, "the page kept refreshing on an idle system"
    assert page.csp_violations == []


COUNT_FETCHES = (
    "() => { window.fetches = 0; const realFetch = window.fetch;"
    " window.fetch = (...args) => { window.fetches++; return realFetch(...args); }; }"
)


def test_refresh__every_three_seconds_by_the_pages_clock_under_its_content_security_policy(
    browser, live_server
) -> None:
    """The page's own clock, paused: no refresh before 3 s, one at 3 s, the next 3 s after
    that one came back. The page's inline script runs under the policy, or nothing would
    refresh at all, and nothing is blocked."""
    make_viewer()
    store.enqueue("test.noop", {})  # queued: the page is live

    def paused_clock(page) -> None:
        page.clock.install(time=0)
        page.clock.pause_at(1_000)

    page = log_in(browser, live_server, "viewer", before=paused_clock)
    assert page.get_attribute("#job-tiles", "data-refresh-ms") == "3000"
    page.evaluate(
        "window.refreshes = 0; document.addEventListener('jobs:refreshed', () => window.refreshes++)"
    )
    page.evaluate(COUNT_FETCHES)

    page.clock.run_for(2_999)
    assert page.evaluate("window.fetches") == 0
    page.clock.run_for(1)
    assert page.evaluate("window.fetches") == 1
    wait_for(lambda: page.evaluate("window.refreshes") == 1, 15, message="the refresh to be swapped in")
    page.clock.run_for(2_999)
    assert page.evaluate("window.fetches") == 1
    page.clock.run_for(1)
    assert page.evaluate("window.fetches") == 2

    assert "script-src 'self' 'nonce-" in page.evaluate(
        "async () => (await fetch(location.href)).headers.get('content-security-policy')"
    )
    assert page.csp_violations == []


def test_operator__retries_a_failed_job_and_sees_it_queued(browser, live_server) -> None:
    make_operator()
    job = make_failed(payload={"repository_id": 7})

    page = log_in(browser, live_server, "operator", next_url=f"{PAGE}?status=failed")
    row = page.locator(f'#result_list tr:has(a[href*="/job/{job.pk}/change/"])')
    assert "RuntimeError: boom" in row.inner_text()
    assert page.locator("button.job-action--cancel").count() == 0
    screenshot(page, "admin_jobs_failed.png")
    row.locator("button.job-action--retry").click()

    page.wait_for_selector(".messagelist")
    assert f"Job #{job.pk} is queued again." in page.inner_text(".messagelist")
    assert "status=failed" in page.url  # back to the same filters
    page.goto(f"{live_server.url}{PAGE}")
    status = page.locator(f'#result_list tr:has(a[href*="/job/{job.pk}/change/"]) .job-status')
    assert status.inner_text() == "queued"
    assert page.get_attribute("#job-tiles", "data-active") == "1"
    screenshot(page, "admin_jobs_page.png")
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (Status.QUEUED, 0, "")

    page.goto(f"{live_server.url}{PAGE}{job.pk}/change/")
    assert "Failed attempts (3)" in page.inner_text("#job-attempts")
    screenshot(page, "admin_job_detail.png")
    assert page.csp_violations == []


def test_operator__ticks_survive_a_refresh_and_bulk_cancel_works(browser, live_server) -> None:
    """The page's own selection script replaces Django's actions.js, which a swap would break."""
    make_operator()
    first, second = store.enqueue("test.noop", {}), store.enqueue("test.noop", {})

    page = log_in(browser, live_server, "operator")
    page.evaluate(
        "window.refreshes = 0; document.addEventListener('jobs:refreshed', () => window.refreshes++)"
    )
    page.check(f'input.action-select[value="{first.pk}"]')
    assert page.inner_text(".action-counter") == "1 of 2 selected"
    wait_for(lambda: page.evaluate("window.refreshes") >= 1, 15, message="a refresh")

    assert page.is_checked(f'input.action-select[value="{first.pk}"]')
    assert not page.is_checked(f'input.action-select[value="{second.pk}"]')
    page.check("#action-toggle")
    assert page.inner_text(".action-counter") == "2 of 2 selected"
    page.uncheck(f'input.action-select[value="{second.pk}"]')
    page.select_option("select[name=action]", "cancel_selected")
    page.click("button[name=index]")

    page.wait_for_selector(".messagelist")
    assert "1 job cancelled." in page.inner_text(".messagelist")
    assert Job.objects.get(pk=first.pk).status == Status.CANCELLED
    assert Job.objects.get(pk=second.pk).status == Status.QUEUED
