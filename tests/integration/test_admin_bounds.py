"""The Background jobs pages do bounded work whatever the rows hold: the list (and its
3-second refresh) reads only what its columns show, a job's page cuts long texts and links
to the whole, and the URL may set only the pages' own filters.

The rows here are written straight to the table: enqueue refuses such payloads now, but
rows written before the limit (or under a larger one) are still shown."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings

from jobs.admin import job_page
from jobs.models import Job, JobAttempt, Status
from tests.admin_jobs import PAGE, make_failed, make_job, make_user, make_viewer
from tests.factories import JobAttemptFactory

pytestmark = pytest.mark.django_db

BIG = 1_000_000  # characters: a runaway error message, or a payload written before the limit
ATTEMPTS = "/admin/platform/jobattempt/"


@pytest.fixture
def viewer_client(client: Client) -> Client:
    client.force_login(make_viewer())
    return client


def _huge_failed_job() -> Job:
    job = make_failed(
        payload={"blob": "p" * BIG, "repository_id": 7},
        error="RuntimeError: " + "e" * BIG,
        tries=0,
    )
    JobAttemptFactory(job=job, attempt=1, error="boom " + "a" * BIG, traceback="Traceback\n" + "t" * BIG)
    return job


def _column(table: str, column: str) -> str:
    """A column as the database's SQL names it (quoted "…" on PostgreSQL, `…` on MariaDB)."""
    return f"{connection.ops.quote_name(table)}.{connection.ops.quote_name(column)}"


def _selects(sql: str, column: str) -> bool:
    """Does the statement read the whole column (not only inside LEFT(...), nor one key of
    it: the records a job's payload names, ``payload ->> 'email_id'`` on PostgreSQL,
    ``JSON_EXTRACT(payload, '$."email_id"')`` on MariaDB)?"""
    quoted = _column("jobs_job", column)
    for part in (f"LEFT({quoted}", f"{quoted} ->>", f"JSON_EXTRACT({quoted}"):
        sql = sql.replace(part, "")
    return quoted in sql


# --- the list and its refresh -------------------------------------------------------------------


@pytest.mark.parametrize("refresh", [False, True], ids=["page", "refresh"])
def test_list__reads_no_payload_and_only_the_start_of_each_error(
    viewer_client: Client, refresh: bool
) -> None:
    job = _huge_failed_job()
    headers = {job_page.REFRESH_HEADER: "1"} if refresh else {}

    with CaptureQueriesContext(connection) as queries:
        response = viewer_client.get(f"{PAGE}?status=failed", headers=headers)

    assert response.status_code == 200
    listed = [
        query["sql"] for query in queries if f"FROM {connection.ops.quote_name('jobs_job')}" in query["sql"]
    ]
    assert listed, "the list's statements"
    assert not any(_selects(sql, "payload") for sql in listed)
    assert not any(_selects(sql, "error") for sql in listed)
    assert len(response.content) < 100_000  # the page itself, not the row's megabytes
    assert f"/admin/platform/job/{job.pk}/change/" in response.text
    assert "RuntimeError: eeee" in response.text  # the error's start is still shown


def test_attempts_list__reads_no_traceback_and_only_the_start_of_each_error(viewer_client: Client) -> None:
    _huge_failed_job()

    with CaptureQueriesContext(connection) as queries:
        response = viewer_client.get(ATTEMPTS)

    assert response.status_code == 200
    table = connection.ops.quote_name("jobs_attempt")
    statements = [query["sql"] for query in queries if f"FROM {table}" in query["sql"]]
    assert statements
    error = _column("jobs_attempt", "error")
    for sql in statements:
        assert _column("jobs_attempt", "traceback") not in sql
        assert error not in sql.replace(f"LEFT({error}", "LEFT(")
    assert len(response.content) < 100_000
    assert "boom aaaa" in response.text


# --- a job's page -----------------------------------------------------------------------------


@override_settings(JOBS_ADMIN_TEXT_CHARS=5_000)
def test_job_page__cuts_long_texts_and_links_to_each_whole(viewer_client: Client) -> None:
    job = _huge_failed_job()
    attempt = JobAttempt.objects.get(job=job)

    response = viewer_client.get(f"{PAGE}{job.pk}/change/")

    assert response.status_code == 200
    assert len(response.content) < 100_000  # four texts of a million characters, cut
    html = response.text
    for part in ("payload", "error"):
        assert f'href="{PAGE}{job.pk}/text/{part}/"' in html
    for part in ("error", "traceback"):
        assert f'href="{PAGE}{job.pk}/attempts/{attempt.pk}/{part}/"' in html
    assert html.count("cut at 5,000 characters") == 4
    assert "Traceback\ntttt" in html and "boom aaaa" in html


def test_job_page__short_texts_are_shown_whole_without_a_link(viewer_client: Client) -> None:
    job = make_failed(tries=1, payload={"repository_id": 7})

    html = viewer_client.get(f"{PAGE}{job.pk}/change/").text

    assert "&quot;repository_id&quot;: 7" in html  # pretty-printed JSON
    assert "cut at" not in html
    assert f"{PAGE}{job.pk}/text/" not in html


def test_whole_texts__are_served_as_plain_text_to_viewers(viewer_client: Client) -> None:
    job = _huge_failed_job()
    attempt = JobAttempt.objects.get(job=job)

    payload = viewer_client.get(f"{PAGE}{job.pk}/text/payload/")
    error = viewer_client.get(f"{PAGE}{job.pk}/text/error/")
    traceback = viewer_client.get(f"{PAGE}{job.pk}/attempts/{attempt.pk}/traceback/")
    attempt_error = viewer_client.get(f"{PAGE}{job.pk}/attempts/{attempt.pk}/error/")

    assert payload["Content-Type"] == "application/json"
    assert json.loads(payload.content) == {"blob": "p" * BIG, "repository_id": 7}
    assert error["Content-Type"] == "text/plain; charset=utf-8"
    assert error.content.decode() == "RuntimeError: " + "e" * BIG
    assert traceback.content.decode() == "Traceback\n" + "t" * BIG
    assert attempt_error.content.decode() == "boom " + "a" * BIG
    assert re.match(r'inline; filename="job-\d+-payload.json"', payload["Content-Disposition"])


def test_whole_texts__need_the_view_permission_and_an_attempt_of_that_job(client: Client) -> None:
    job, other = make_failed(tries=1), make_failed(tries=1)
    attempt = JobAttempt.objects.get(job=job)

    assert client.get(f"{PAGE}{job.pk}/text/error/").status_code == 302  # to the login page
    client.force_login(make_user("clerk"))  # staff without platform.view_jobs
    assert client.get(f"{PAGE}{job.pk}/text/error/").status_code == 403
    assert client.get(f"{PAGE}{job.pk}/attempts/{attempt.pk}/traceback/").status_code == 403
    client.force_login(make_viewer())
    assert client.get(f"{PAGE}{other.pk}/attempts/{attempt.pk}/traceback/").status_code == 404
    assert client.get(f"{PAGE}{job.pk}/text/locked_by/").status_code == 404
    assert client.get(f"{PAGE}999999/text/error/").status_code == 404


# --- only the pages' own filters ------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "error__regex=(a%2B)%2B%24",
        "payload__repository_id=7",
        "payload__has_key=blob",
        "locked_by__icontains=host",
        "id__gt=0",
        "utm_source=mail",
    ],
)
@pytest.mark.parametrize("refresh", [False, True], ids=["page", "refresh"])
def test_list__a_lookup_that_is_not_one_of_the_pages_filters_is_a_bad_request(
    viewer_client: Client, query: str, refresh: bool
) -> None:
    make_failed()
    headers = {job_page.REFRESH_HEADER: "1"} if refresh else {}

    with CaptureQueriesContext(connection) as queries:
        response = viewer_client.get(f"{PAGE}?status=failed&{query}", headers=headers)

    assert response.status_code == 400
    assert not any("REGEX" in q["sql"].upper() or "payload" in q["sql"] for q in queries)


def test_list__its_own_filters_search_and_paging_are_taken(viewer_client: Client) -> None:
    failed = make_failed(dedupe_key="email:7")
    make_job(Status.SUCCEEDED)

    response = viewer_client.get(f"{PAGE}?status=failed&queue=default&type=test.fail&q=email:7&p=1&all=")

    assert response.status_code == 200
    assert f"/admin/platform/job/{failed.pk}/change/" in response.text


def test_list__the_admins_own_parameters_still_work(viewer_client: Client) -> None:
    """A job's page carries the list's filters (``_changelist_filters``) and links back to
    the list with them as plain filters; the admin's error flag (``e``) is its own too."""
    failed = make_failed()

    page = viewer_client.get(
        f"{PAGE}{failed.pk}/change/?_changelist_filters=status%3Dfailed%26q%3D{failed.pk}"
    )
    back = re.search(r'href="(/admin/platform/job/\?[^"]*)"', page.text).group(1).replace("&amp;", "&")

    assert page.status_code == 200
    assert back == f"{PAGE}?status=failed&q={failed.pk}"
    assert viewer_client.get(back).status_code == 200
    assert viewer_client.get(f"{PAGE}?e=1").status_code == 200


def test_list__an_order_in_the_url_is_ignored_as_the_list_has_one_order(viewer_client: Client) -> None:
    older, newer = make_job(Status.SUCCEEDED, "test.record"), make_job(Status.SUCCEEDED, "test.ai")

    with CaptureQueriesContext(connection) as queries:
        html = viewer_client.get(f"{PAGE}?o=1").text  # by type: test.ai before test.record

    ids = [
        int(pk) for pk in re.findall(r'<th class="field-id"><a href="/admin/platform/job/(\d+)/change/', html)
    ]
    assert ids == [newer.pk, older.pk]
    assert not any(f"ORDER BY {_column('jobs_job', 'type')}" in q["sql"] for q in queries)


def test_attempts_list__a_lookup_that_is_not_its_filter_is_a_bad_request(viewer_client: Client) -> None:
    make_failed()

    assert viewer_client.get(f"{ATTEMPTS}?traceback__regex=x").status_code == 400
    assert viewer_client.get(f"{ATTEMPTS}?error__contains=boom").status_code == 400
    assert viewer_client.get(f"{ATTEMPTS}?outcome=failed").status_code == 200
