"""The charts of the Background jobs page in headless Chromium: drawn within the page's
Content-Security-Policy, the window toggle without a script, the reader's choice kept
across the live refresh, and the numbers in each bar's title."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import rollup, store
from jobs.models import QueueDepth
from jobs.rollup import Finished
from tests.browser.test_admin_browser import CHROMIUM, browser  # noqa: F401 - the fixture
from tests.browser.test_admin_cockpit import log_in, superuser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
    ),
    pytest.mark.django_db(transaction=True),
]


def test_charts__drawn_within_the_policy_toggled_without_script_and_kept_across_the_refresh(
    browser,  # noqa: F811 - the fixture
    live_server,
) -> None:
    superuser()
    rollup.record([Finished("default", "test.noop", rollup.SUCCEEDED, 0.02, 0.4)] * 5)
    rollup.record([Finished("default", "test.noop", rollup.FAILED, 0.02, 0.4)])
    QueueDepth.objects.create(minute=rollup.span_start(timezone.now(), 1), queue="default", due=9, running=1)
    # Something queued (not due): the page refreshes itself.
    store.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=1))

    tab = log_in(browser, live_server, "/admin/platform/job/")
    hour, day = "#job-chart-hour-finished", "#job-chart-day-finished"
    assert tab.is_visible(f"{hour} svg") and not tab.is_visible(f"{day} svg")
    bars = tab.locator(f"{hour} svg g title")
    assert bars.count() == 1 and bars.first.text_content().endswith("5 succeeded, 0 retried, 1 failed")

    tab.click("label[for=job-chart-day]")
    assert tab.is_visible(f"{day} svg") and not tab.is_visible(f"{hour} svg")
    tab.wait_for_function(
        "() => new Promise((done) => document.addEventListener('jobs:refreshed', () => done(true), {once: true}))"
    )
    assert tab.is_visible(f"{day} svg") and not tab.is_visible(f"{hour} svg")  # kept across the swap
    assert tab.csp_violations == []
