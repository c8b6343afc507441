"""Retry and Cancel from the page: the engine's rules, its errors shown, and bulk actions."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.utils.html import strip_tags

from jobs.models import Job, Status
from jobs.store import CANCELLED, REQUEUED_BY_ADMIN
from tests.admin_jobs import PAGE, make_failed, make_job, make_operator, make_viewer
from tests.integration.test_admin_page import row_ids

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client: Client) -> Client:
    client.force_login(make_operator())
    return client


def texts(response) -> list[str]:
    """The messages as read (a message's link to the job reads as its text)."""
    return [strip_tags(str(message)) for message in get_messages(response.wsgi_request)]


def test_retry__resets_the_budget_clears_the_error_and_says_who(operator_client: Client) -> None:
    job = make_failed(tries=3)

    response = operator_client.post(f"{PAGE}{job.pk}/retry/", follow=True)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.error, job.message) == (Status.QUEUED, 0, "", REQUEUED_BY_ADMIN)
    assert f"Job #{job.pk} is queued again." in texts(response)


def test_retry__of_a_job_that_is_no_longer_failed_shows_the_engines_error(operator_client: Client) -> None:
    """The page was drawn while it failed; meanwhile someone retried it and a worker took it."""
    job = make_job(Status.RUNNING)

    response = operator_client.post(f"{PAGE}{job.pk}/retry/", {"next": PAGE}, follow=True)

    assert Job.objects.get(pk=job.pk).status == Status.RUNNING
    assert f"Only a failed job can be retried; job #{job.pk} is running." in response.text


def test_cancel__cancels_a_queued_job(operator_client: Client) -> None:
    job = make_job()

    operator_client.post(f"{PAGE}{job.pk}/cancel/")

    job.refresh_from_db()
    assert (job.status, job.message) == (Status.CANCELLED, CANCELLED)


def test_cancel__of_a_running_job_is_refused_with_the_engines_error(operator_client: Client) -> None:
    job = make_job(Status.RUNNING)

    response = operator_client.post(f"{PAGE}{job.pk}/cancel/", follow=True)

    assert Job.objects.get(pk=job.pk).status == Status.RUNNING
    assert f"Only a queued job can be cancelled; job #{job.pk} is running." in texts(response)


def test_bulk_retry__retries_the_failed_and_reports_the_rest(operator_client: Client) -> None:
    failed_a, failed_b, succeeded = make_failed(), make_failed(), make_job(Status.SUCCEEDED)

    response = operator_client.post(
        PAGE,
        {
            "action": "retry_selected",
            "_selected_action": [failed_a.pk, failed_b.pk, succeeded.pk],
            "index": 0,
        },
        follow=True,
    )

    assert set(Job.objects.filter(status=Status.QUEUED).values_list("pk", flat=True)) == {
        failed_a.pk,
        failed_b.pk,
    }
    assert Job.objects.get(pk=succeeded.pk).status == Status.SUCCEEDED
    messages = texts(response)
    assert "2 jobs queued again." in messages
    assert f"Only a failed job can be retried; job #{succeeded.pk} is succeeded." in messages


def test_bulk_cancel__cancels_the_queued_and_reports_the_running(operator_client: Client) -> None:
    queued, running = make_job(), make_job(Status.RUNNING)

    response = operator_client.post(
        PAGE,
        {"action": "cancel_selected", "_selected_action": [queued.pk, running.pk], "index": 0},
        follow=True,
    )

    assert Job.objects.get(pk=queued.pk).status == Status.CANCELLED
    assert Job.objects.get(pk=running.pk).status == Status.RUNNING
    assert "1 job cancelled." in texts(response)
    assert f"Only a queued job can be cancelled; job #{running.pk} is running." in texts(response)


def test_job_page__offers_retry_for_a_failed_job_and_it_works(operator_client: Client) -> None:
    job = make_failed()

    detail = operator_client.get(f"{PAGE}{job.pk}/change/")
    operator_client.post(f"{PAGE}{job.pk}/retry/")

    assert f'action="{PAGE}{job.pk}/retry/"' in detail.text
    assert Job.objects.get(pk=job.pk).status == Status.QUEUED


def test_job_page__has_no_save_or_delete(operator_client: Client) -> None:
    """The admin's generic edit would overwrite what a worker wrote meanwhile."""
    job = make_job()

    detail = operator_client.get(f"{PAGE}{job.pk}/change/")
    posted = operator_client.post(f"{PAGE}{job.pk}/change/", {"status": "succeeded"})

    assert 'name="_save"' not in detail.text
    assert operator_client.get(f"{PAGE}{job.pk}/delete/").status_code == 403
    assert operator_client.get(f"{PAGE}add/").status_code == 403
    assert posted.status_code == 403
    assert Job.objects.get(pk=job.pk).status == Status.QUEUED


# --- dismiss ----------------------------------------------------------------------------------


def test_dismiss__from_a_failed_jobs_page_takes_it_off_the_failed_list_and_tile(
    operator_client: Client,
) -> None:
    job, other = make_failed(), make_failed()

    detail = operator_client.get(f"{PAGE}{job.pk}/change/")
    response = operator_client.post(f"{PAGE}{job.pk}/dismiss/")

    assert f'action="{PAGE}{job.pk}/dismiss/"' in detail.text
    assert f"Job #{job.pk} is dismissed." in texts(response)
    assert Job.objects.get(pk=job.pk).dismissed_at is not None
    failed_list = operator_client.get(f"{PAGE}?status=failed").text
    assert row_ids(failed_list) == [other.pk]
    assert re.search(r'job-tile--failed.*?class="job-tile-count"[^>]*>1<', failed_list, re.S)
    assert row_ids(operator_client.get(f"{PAGE}?status=dismissed").text) == [job.pk]
    assert f'action="{PAGE}{job.pk}/dismiss/"' not in operator_client.get(f"{PAGE}{job.pk}/change/").text


def test_bulk_dismiss__dismisses_the_failed_and_reports_the_rest(operator_client: Client) -> None:
    failed, queued = make_failed(), make_job()

    response = operator_client.post(
        PAGE, {"action": "dismiss_selected", "_selected_action": [failed.pk, queued.pk]}, follow=True
    )

    assert "1 job dismissed." in texts(response)
    assert any("Only a failed job can be dismissed" in text for text in texts(response))
    assert Job.objects.get(pk=failed.pk).dismissed_at is not None
    assert Job.objects.get(pk=queued.pk).dismissed_at is None


def test_dismiss__needs_the_change_permission(client: Client) -> None:
    client.force_login(make_viewer())
    job = make_failed()

    detail = client.get(f"{PAGE}{job.pk}/change/")
    forged = client.post(f"{PAGE}{job.pk}/dismiss/")
    bulk = client.post(PAGE, {"action": "dismiss_selected", "_selected_action": [job.pk]})

    assert "/dismiss/" not in detail.text
    assert forged.status_code == 403
    assert bulk.status_code in (200, 302)
    assert Job.objects.get(pk=job.pk).dismissed_at is None
