"""The Workflows page in headless Chromium, as an operator uses it: the list links a failed
workflow; its page draws the steps as a graph (no script), a step's box leads to its job,
whose page leads back; Retry resumes the workflow and a real worker completes it; Cancel
stops a running one. A viewer sees no buttons. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

import jobs
from jobs import testing
from jobs.models import Job, Workflow
from tests.admin_jobs import make_user, make_viewer
from tests.browser import test_admin_browser
from tests.browser.test_admin_browser import log_in, screenshot
from tests.support.waiting import wait_for

browser = test_admin_browser.browser  # the page's Chromium fixture, shared with its other tests

pytestmark = [
    pytest.mark.browser,  # skipped without Chromium, failed in CI (tests/support/chromium.py)
    pytest.mark.django_db(transaction=True),  # the live server and the worker see committed rows
]

LIST = "/admin/platform/workflow/"


def s(value: str, **payload: object) -> jobs.Step:
    return jobs.step("test.step", {"value": value, **payload}, name=value)


def box(page, name: str):
    """A step's box in the graph (its first line is "#N name")."""
    return page.locator("svg.workflow-graph g.workflow-step", has_text=f" {name}").first


def test_workflows_page__graph_job_links_retry_and_cancel(
    browser, live_server, start_worker, tmp_path
) -> None:
    fixed = tmp_path / "fixed"
    flow = jobs.chain(
        s("fetch"),
        jobs.group([s("ingest a"), s("ingest b", fail_unless=str(fixed)), s("ingest c")], then=s("derive")),
        s("mine"),
    )
    workflow = jobs.start(flow, name="demo.provision", dedupe_key="workspace:1")
    testing.drain()  # b fails for good: derive and mine are cancelled
    make_user("operator", "view_jobs", "change_workflow")

    page = log_in(browser, live_server, "operator", next_url=LIST, waits_for=LIST)
    row = page.locator("#result_list tbody tr", has_text="demo.provision")
    assert "failed" in row.inner_text() and "3 of 6 succeeded" in row.inner_text()
    row.locator("a", has_text="demo.provision").click()
    page.wait_for_url(f"**{LIST}{workflow.pk}/change/")

    graph = page.locator("svg.workflow-graph")
    assert graph.locator("g.workflow-step").count() == 6
    assert graph.locator(".workflow-edge").count() == 7  # fetch→a,b,c; a,b,c→derive; derive→mine
    assert "workflow-status--failed" in box(page, "ingest b").get_attribute("class")
    assert "workflow-status--cancelled" in box(page, "derive").get_attribute("class")
    assert "Upstream step #3 ingest b failed." in box(page, "derive").locator("title").text_content()
    screenshot(page, "admin_workflow_failed.png")

    box(page, "ingest b").click()  # its box links its job
    failed_job = Job.objects.get(step__workflow_id=workflow.pk, step__name="ingest b")
    page.wait_for_url(f"**/admin/platform/job/{failed_job.pk}/change/")
    page.locator(".field-workflow a", has_text=f"workflow #{workflow.pk}").click()
    page.wait_for_url(f"**{LIST}{workflow.pk}/change/")

    fixed.touch()
    page.locator("button.job-action--retry").click()
    page.wait_for_selector(".messagelist .success")
    assert f"Workflow #{workflow.pk} resumes" in page.locator(".messagelist").inner_text()
    start_worker("--burst")
    wait_for(
        lambda: Workflow.objects.get(pk=workflow.pk).status == Workflow.Status.SUCCEEDED,
        timeout=60,
        message="the worker to finish the resumed workflow",
    )
    page.goto(f"{live_server.url}{LIST}{workflow.pk}/change/")
    assert page.locator("svg.workflow-graph g.workflow-status--succeeded").count() == 6
    assert "Retried by operator" in page.locator(".field-operator_actions").inner_text()
    screenshot(page, "admin_workflow_succeeded.png")

    running = jobs.start(jobs.chain(s("first"), s("second")), name="demo.running")
    page.goto(f"{live_server.url}{LIST}{running.pk}/change/")
    page.locator("button.job-action--cancel").click()
    page.wait_for_selector(".messagelist .success")
    assert Workflow.objects.get(pk=running.pk).status == Workflow.Status.CANCELLED
    assert page.locator("svg.workflow-graph g.workflow-status--cancelled").count() == 2
    assert [entry.get_change_message() for entry in LogEntry.objects.order_by("action_time")] == [
        "Retried",
        "Cancelled",
    ]
    assert not page.csp_violations

    make_viewer()
    viewer = log_in(browser, live_server, "viewer", next_url=f"{LIST}{workflow.pk}/change/", waits_for=LIST)
    assert viewer.locator("svg.workflow-graph g.workflow-step").count() == 6
    assert viewer.locator("button.job-action--retry, button.job-action--cancel").count() == 0
