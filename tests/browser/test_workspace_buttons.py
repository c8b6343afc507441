"""A job button of the workspace admin end to end, in headless Chromium: Re-index on a
repository page queues one ingest however often it is pressed, links to the job on the
"Background jobs" page, and a real ``runworker --burst`` fetches the repository with git."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from jobs.models import Job, Status
from tests.admin_jobs import PASSWORD
from tests.browser.test_admin_browser import CHROMIUM, browser, screenshot  # noqa: F401 - the fixture
from tests.support.git_repos import Origin
from workspaces.job_types import INGEST_REPOSITORY
from workspaces.models import Repository

from ..workspaces.factories import RepositoryFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
    ),
    pytest.mark.django_db(transaction=True),  # the live server and the worker see committed rows
]


def test_reindex_button__queues_one_ingest_links_to_it_and_a_worker_fetches_the_repository(
    browser,  # noqa: F811 - the fixture imported above
    live_server,
    start_worker,
    tmp_path,
) -> None:
    origin = Origin(tmp_path / "origin")
    commit = origin.commit({"manage.py": "import django\n", "app/views.py": "def index(): ...\n"})
    repository = RepositoryFactory(url=origin.url, metadata={})
    User.objects.create_superuser("admin", "admin@example.com", PASSWORD)
    change_page = f"/admin/workspaces/repository/{repository.pk}/change/"

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/admin/login/?next={change_page}")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{change_page}")

    for _ in range(2):
        page.click("button.job-button:has-text('Re-index')")
        page.wait_for_selector(".messagelist .success")
    job = Job.objects.get(type=INGEST_REPOSITORY)
    message = page.inner_text(".messagelist .success")
    assert f"Re-index for {repository.name}: repository.ingest job #{job.pk} is queued." in message
    screenshot(page, "workspace_reindex_queued.png")

    page.click(f".messagelist a:has-text('job #{job.pk}')")
    page.wait_for_url(f"**/admin/platform/job/{job.pk}/change/")

    worker = start_worker(
        "--burst", "--concurrency", "1", env={"REPOSITORIES_ROOT": str(tmp_path / "checkouts")}
    )
    assert worker.wait(timeout=120) == 0, worker.log()
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED, job.error
    repository.refresh_from_db()
    assert (repository.commit_sha, repository.kind) == (commit, "django-project")
    page.reload()
    assert "succeeded" in page.inner_text("#content").lower()
    assert Job.objects.filter(type=INGEST_REPOSITORY).count() == 1
    assert Repository.objects.get(pk=repository.pk).paths == ["app/views.py", "manage.py"]
