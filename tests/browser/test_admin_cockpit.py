"""The admin as an operator uses it, in headless Chromium (Debian's) at 1400 × 900 with the
navigation open: every page answers, a job links to its record and the record back to the
job, Reprocess on an email's page is run by a real ``runworker --burst`` and the page shows
what became of it, and what the system writes offers no form. Screenshots of an email, a
repository and a failed job go to tests/artifacts/."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.models import Job, Status
from pipeline import intake
from pipeline.models import EmailMessage
from tests.admin_jobs import PASSWORD, make_failed
from tests.browser.test_admin_browser import CHROMIUM, browser, screenshot  # noqa: F401 - the fixture
from tests.pipeline import corpus
from tests.pipeline.conftest import blob_root, worker_env  # noqa: F401 - the pipeline's fixtures
from tests.support.admin_walk import one_of_each, pages
from tests.support.chromium import record_csp_violations
from tests.workspaces.factories import RepositoryFactory
from workspaces import models as workspace_models

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
    ),
    pytest.mark.django_db(transaction=True),  # the live server and the worker see committed rows
]


def log_in(browser, live_server, url: str, username: str = "admin"):  # noqa: F811 - the fixture
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(20_000)
    page.csp_violations = record_csp_violations(page)
    page.goto(f"{live_server.url}/admin/login/?next={url}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{url}")
    return page


def superuser() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", PASSWORD)


def test_walk__every_list_and_change_page_answers_without_a_server_error(
    browser,  # noqa: F811 - the fixture
    live_server,
    rf,
) -> None:
    user = superuser()
    request = rf.get("/admin/")
    request.user = user
    walk = [page for page in pages(one_of_each(), request) if page.kind != "add"]

    tab = log_in(browser, live_server, "/admin/")
    answers, blocked = {}, {}
    for page in walk:
        before = len(tab.csp_violations)
        response = tab.goto(f"{live_server.url}{page.url}")
        tab.wait_for_load_state("load")
        answers[str(page)] = response.status if response else 0
        if len(tab.csp_violations) > before:
            blocked[str(page)] = tab.csp_violations[before:]

    assert {page: status for page, status in answers.items() if status >= 500 or status == 0} == {}
    assert len(answers) >= 2 * 20
    # The site sends a Content-Security-Policy: no page may carry what it blocks (an inline
    # style or script without the nonce), or that part of the page silently does not work.
    assert blocked == {}


def test_links__a_job_leads_to_its_email_and_the_email_back_to_its_job(
    browser,  # noqa: F811 - the fixture
    live_server,
) -> None:
    superuser()
    email = intake.receive(corpus.plain()).email
    job = Job.objects.get(type="email.process")

    tab = log_in(browser, live_server, f"/admin/platform/job/{job.pk}/change/")
    tab.click(f"a.job-record:has-text('email #{email.pk}')")
    tab.wait_for_url(f"**/admin/pipeline/emailmessage/{email.pk}/change/")

    tab.click(f"#recent-jobs a:has-text('#{job.pk}')")
    tab.wait_for_url(f"**/admin/platform/job/{job.pk}/change/")


def test_reprocess__on_an_emails_page_queues_a_job_a_worker_runs_and_the_page_shows_it(
    browser,  # noqa: F811 - the fixture
    live_server,
    start_worker,
) -> None:
    superuser()
    email = intake.receive(corpus.multipart_with_attachments()).email
    failed = Job.objects.get(type="email.process")
    # Its job failed for good after three tries; the email is marked for review.
    Job.objects.filter(pk=failed.pk).update(
        status=Status.FAILED,
        attempts=3,
        error="pipeline.errors.ModelCallError: timed out",
        finished_at=timezone.now(),
    )
    EmailMessage.objects.filter(pk=email.pk).update(status="failed", needs_review=True)
    url = f"/admin/pipeline/emailmessage/{email.pk}/change/"

    tab = log_in(browser, live_server, url)
    assert "Failed for good after 3/3 tries" in tab.inner_text("div.field-status_text")
    tab.click("button.job-button:has-text('Reprocess')")
    tab.wait_for_selector(".messagelist .success")
    job = Job.objects.get(type="email.process", status=Status.QUEUED)
    assert f"Reprocess for {email}: email.process job #{job.pk} is queued." in tab.inner_text(".messagelist")
    assert (
        tab.get_attribute(f".messagelist a:has-text('#{job.pk}')", "href")
        == f"/admin/platform/job/{job.pk}/change/"
    )

    worker = start_worker("--burst", "--queue", "mail:1")
    assert worker.wait(timeout=120) == 0, worker.log()
    tab.reload()

    assert Job.objects.get(pk=job.pk).status == Status.SUCCEEDED
    rows = tab.locator("#recent-jobs tbody tr")
    assert rows.count() == 2
    assert "succeeded" in rows.nth(0).inner_text() and f"#{job.pk}" in rows.nth(0).inner_text()
    assert (
        "failed" in rows.nth(1).inner_text() and rows.nth(1).locator("button:has-text('Retry')").count() == 1
    )
    assert tab.inner_text("div.field-status_text").strip().endswith("Labelled")
    assert tab.locator("div.field-needs_review").count() == 0  # shown only while set
    screenshot(tab, "cockpit_email.png")


def test_repository_and_failed_job_pages__as_an_operator_sees_them(
    browser,  # noqa: F811 - the fixture
    live_server,
) -> None:
    """Screenshots, and what they must show: the repository's jobs and its secret finding,
    the failed job's record and its tries counted across an operator's retry."""
    superuser()
    repository = RepositoryFactory(
        ingested=True,
        findings=[
            {"rule": "debt.markers", "path": "app/models.py", "message": "1 TODO/FIXME markers."},
            {"rule": "secrets.aws-key", "path": "config/prod.py", "message": "An AWS access key id appears."},
        ],
    )
    job = make_failed(
        "repository.analyse",
        tries=2,
        payload={"repository_id": repository.pk},
        error="ModelUnavailable: the model endpoint answered 503",
        finished_at=timezone.now() - timedelta(minutes=1),
        keyed=True,
    )

    tab = log_in(browser, live_server, f"/admin/workspaces/repository/{repository.pk}/change/")
    panel = tab.inner_text("#recent-jobs")
    assert "repository.analyse" in panel and "ModelUnavailable" in panel
    assert tab.locator("tr.ws-secret").count() == 1
    screenshot(tab, "cockpit_repository.png")

    tab.goto(f"{live_server.url}/admin/platform/job/{job.pk}/change/")
    tab.click("button.job-action--retry")
    tab.wait_for_selector(".messagelist .success")
    assert "Requeued by admin at" in tab.inner_text("div.field-operator_actions")
    assert tab.inner_text("div.field-records").strip().endswith(f"repository #{repository.pk}")
    screenshot(tab, "cockpit_failed_job.png")


def test_read_only__what_the_system_writes_offers_no_add_and_no_change_form(
    browser,  # noqa: F811 - the fixture
    live_server,
    rf,
) -> None:
    superuser()
    rows = one_of_each()
    written = [
        workspace_models.TrialReminder,
        workspace_models.AIArtifact,
        workspace_models.ReviewCapsule,
        workspace_models.SourceItem,
        Job,
        rows[Job].failed_attempts.model,
    ]

    tab = log_in(browser, live_server, "/admin/")
    for model in written:
        info = f"/admin/{model._meta.app_label}/{model._meta.model_name}"
        listing = tab.goto(f"{live_server.url}{info}/")
        assert listing.status == 200 and tab.locator(".object-tools a.addlink").count() == 0, model
        assert tab.goto(f"{live_server.url}{info}/add/").status == 403, model
        tab.goto(f"{live_server.url}{info}/{rows[model].pk}/change/")
        form = tab.locator("#content-main form").first
        editable = form.locator("input:not([type=hidden]), textarea, select")
        assert editable.count() == 0, f"{model._meta.label}: {editable.count()} fields to type in"
        assert tab.locator("input[name=_save]").count() == 0, model
