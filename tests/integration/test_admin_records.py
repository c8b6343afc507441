"""Jobs and the records they are about, both ways: a job's row and page link the records
its payload names; a record's page shows its recent jobs (with Retry for operators) and its
list the last job of each row, read in one query; who retried or cancelled a job is on its
page. The records here are the workspace domain's, registered from its own admin."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

import jobs
from jobs.admin import payload_links
from jobs.models import Job, Status
from tests.admin_jobs import PAGE, PASSWORD, make_failed, make_job, make_operator
from tests.workspaces.factories import RepositoryFactory

pytestmark = pytest.mark.django_db


def _user(username: str, *perms: str) -> User:
    """A staff user with these permissions (``app_label.codename``)."""
    user = User.objects.create_user(username, password=PASSWORD, is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return user


def _as(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def _repository_page(repository) -> str:
    return reverse("admin:workspaces_repository_change", args=[repository.pk])


# --- from a job to its records ------------------------------------------------------------------


def test_job_row_and_page__link_the_records_their_payload_names(client: Client) -> None:
    repository = RepositoryFactory()
    job = make_job(
        type_name="ai.workflow",
        payload={
            "workflow": "test_plan",
            "workspace_id": repository.workspace_id,
            "repository_id": repository.pk,
            "pull_request_id": None,
        },
    )
    _as(client, make_operator())
    link = f'href="{_repository_page(repository)}">repository #{repository.pk}</a>'
    workspace = reverse("admin:workspaces_workspace_change", args=[repository.workspace_id])

    row = client.get(PAGE).text
    page = client.get(f"{PAGE}{job.pk}/change/").text

    for html in (row, page):
        assert link in html
        assert f'href="{workspace}"' in html
        assert "pull request #" not in html  # a field that names no record links nothing


def test_record_links__are_made_from_the_linked_fields_alone_never_from_a_whole_payload(
    django_assert_num_queries,
) -> None:
    """The list may leave payloads unread (they can be large): each linked field is read as
    a column of its own."""
    make_job(type_name="repository.ingest", payload={"repository_id": 5, "notes": "x" * 10_000})
    job = payload_links.annotate(Job.objects.defer("payload")).get()

    with django_assert_num_queries(0):
        html = payload_links.record_links(job)

    assert html == '<a class="job-record" href="/admin/workspaces/repository/5/change/">repository #5</a>'


def test_register_payload_link__refuses_an_unknown_model_and_a_second_model_for_a_field() -> None:
    with pytest.raises(ImproperlyConfigured, match="no model 'pipeline.nothing'"):
        jobs.register_payload_link("thing_id", "pipeline.nothing")
    jobs.register_payload_link("email_id", "pipeline.emailmessage", label="email")  # the same again: fine
    with pytest.raises(ImproperlyConfigured, match="already linked to pipeline.emailmessage"):
        jobs.register_payload_link("email_id", "workspaces.repository")
    assert {link.field for link in payload_links.registered()} >= {"email_id", "repository_id"}


# --- from a record to its jobs --------------------------------------------------------------------


def test_record_page__shows_its_recent_jobs_of_every_type_with_links_errors_and_retry(client: Client) -> None:
    repository = RepositoryFactory()
    ingest = make_failed(
        "repository.ingest", payload={"repository_id": repository.pk}, error="GitError: refused", keyed=True
    )
    analysis = make_job(type_name="repository.analyse", payload={"repository_id": repository.pk}, keyed=True)
    other = make_job(
        type_name="repository.ingest", payload={"repository_id": RepositoryFactory().pk}, keyed=True
    )
    operator = _user(
        "ops",
        "workspaces.view_repository",
        "workspaces.change_repository",
        "platform.view_jobs",
        "platform.change_job",
    )

    panel = _panel(_as(client, operator).get(_repository_page(repository)).text)

    assert f'href="/admin/platform/job/{ingest.pk}/change/"' in panel
    assert f'href="/admin/platform/job/{analysis.pk}/change/"' in panel
    assert f"/job/{other.pk}/" not in panel
    assert "GitError: refused" in panel
    assert f'action="/admin/platform/job/{ingest.pk}/retry/"' in panel
    assert f'action="/admin/platform/job/{analysis.pk}/cancel/"' in panel
    assert f"?q=repository:{repository.pk}" in panel  # all of them on the Background jobs page


def test_record_page__hides_errors_and_links_from_users_who_cannot_see_jobs_and_retry_from_viewers(
    client: Client,
) -> None:
    repository = RepositoryFactory()
    job = make_failed(
        "repository.ingest",
        payload={"repository_id": repository.pk},
        error="token=abc123 refused",
        keyed=True,
    )

    panel = _panel(
        _as(client, _user("reader", "workspaces.view_repository")).get(_repository_page(repository)).text
    )
    assert "repository.ingest" in panel and "failed" in panel
    assert "token=abc123" not in panel and f"/job/{job.pk}/" not in panel

    viewer = _user("viewer", "workspaces.view_repository", "platform.view_jobs")
    panel = _panel(_as(client, viewer).get(_repository_page(repository)).text)
    assert "token=abc123" in panel and f"/job/{job.pk}/change/" in panel
    assert "/retry/" not in panel


def test_retry_from_a_record_page__queues_the_job_records_who_and_returns_to_the_record(
    client: Client,
) -> None:
    repository = RepositoryFactory()
    job = make_failed("repository.ingest", payload={"repository_id": repository.pk}, keyed=True)
    operator = make_operator()
    back = _repository_page(repository)

    response = _as(client, operator).post(f"{PAGE}{job.pk}/retry/", {"next": back})

    assert response.status_code == 302 and response["Location"] == back
    assert Job.objects.get(pk=job.pk).status == Status.QUEUED
    entry = LogEntry.objects.get(object_id=str(job.pk), content_type__app_label="platform")
    assert (entry.user, entry.get_change_message()) == (operator, "Requeued")
    page = client.get(f"{PAGE}{job.pk}/change/").text
    assert re.search(r"Requeued by <strong>operator</strong> at <time[^>]*>\d\d:\d\d</time>", page)


def test_cancel__is_recorded_with_who_and_shown_on_the_jobs_page(client: Client) -> None:
    job = make_job()
    _as(client, make_operator()).post(f"{PAGE}{job.pk}/cancel/")
    assert "Cancelled by <strong>operator</strong> at" in client.get(f"{PAGE}{job.pk}/change/").text


def test_record_list__reads_every_rows_last_job_in_one_query(client: Client) -> None:
    _as(client, User.objects.create_superuser("admin", "a@example.com", PASSWORD))
    url = reverse("admin:workspaces_repository_changelist")

    def statements_for(rows: int) -> int:
        for _ in range(rows):
            repository = RepositoryFactory()
            make_failed("repository.ingest", payload={"repository_id": repository.pk}, keyed=True)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    few = statements_for(1)
    many = statements_for(20)

    assert many == few
    html = client.get(url).text
    assert html.count('class="job-status job-status--failed"') == 21


def _panel(html: str) -> str:
    start = html.index('id="recent-jobs"')
    return html[start : html.index("</section>", start)]
