"""Who may see the Background jobs page and who may press Retry / Cancel (and forge it)."""

from __future__ import annotations

import pytest
from django.test import Client

from jobs.models import Job, Status
from tests.admin_jobs import PAGE, make_failed, make_job, make_operator, make_user, make_viewer

pytestmark = pytest.mark.django_db


def retry_url(job: Job) -> str:
    return f"{PAGE}{job.pk}/retry/"


def cancel_url(job: Job) -> str:
    return f"{PAGE}{job.pk}/cancel/"


def test_anonymous__is_sent_to_the_login_page(client: Client) -> None:
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/admin/platform/job/")


def test_anonymous__cannot_retry(client: Client) -> None:
    job = make_failed()

    response = client.post(retry_url(job))

    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert Job.objects.get(pk=job.pk).status == Status.FAILED


def test_staff_without_the_permission__sees_no_link_and_gets_403(client: Client) -> None:
    client.force_login(make_user("clerk"))
    job = make_job()

    index = client.get("/admin/")

    assert index.status_code == 200
    assert "Background jobs" not in index.text
    assert client.get(PAGE).status_code == 403
    assert client.get(f"{PAGE}{job.pk}/change/").status_code == 403


def test_viewer__sees_the_section_and_the_page_without_buttons(client: Client) -> None:
    client.force_login(make_viewer())
    failed, queued = make_failed(), make_job()

    index = client.get("/admin/")
    page = client.get(PAGE)
    detail = client.get(f"{PAGE}{failed.pk}/change/")

    assert "Platform" in index.text and "Background jobs" in index.text
    assert page.status_code == 200
    assert f"#{failed.pk}" in page.text or f">{failed.pk}<" in page.text
    assert "<button" not in page.text.split('id="changelist"')[1]  # no Retry / Cancel buttons
    assert 'name="action"' not in page.text  # no bulk actions either
    assert 'id="job-row-action"' not in page.text
    assert detail.status_code == 200 and "job-action--" not in detail.text
    assert queued.status == Status.QUEUED


def test_operator__sees_retry_on_failed_and_cancel_on_queued_only(client: Client) -> None:
    client.force_login(make_operator())
    failed = make_failed()
    queued = make_job()
    running = make_job(Status.RUNNING)
    succeeded = make_job(Status.SUCCEEDED)

    page = client.get(PAGE).text

    assert f'formaction="{retry_url(failed)}"' in page
    assert f'formaction="{cancel_url(queued)}"' in page
    for job in (running, succeeded):
        assert f'data-job="{job.pk}"' not in page
    assert page.count("job-action--retry") == 1 and page.count("job-action--cancel") == 1
    assert 'value="retry_selected"' in page and 'value="cancel_selected"' in page


def test_viewer__forged_retry_post_is_refused(client: Client) -> None:
    """A viewer with a valid session and CSRF token still may not change a job."""
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_viewer())
    job = make_failed()
    csrf_client.get(PAGE)  # sets the CSRF cookie
    token = csrf_client.cookies["csrftoken"].value

    response = csrf_client.post(retry_url(job), {"csrfmiddlewaretoken": token})

    assert response.status_code == 403
    assert Job.objects.get(pk=job.pk).status == Status.FAILED


def test_viewer__forged_bulk_action_is_refused(client: Client) -> None:
    client.force_login(make_viewer())
    job = make_failed()

    client.post(PAGE, {"action": "retry_selected", "_selected_action": [job.pk], "index": 0})

    assert Job.objects.get(pk=job.pk).status == Status.FAILED


def test_operator__post_without_csrf_token_is_refused() -> None:
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_operator())
    failed, queued = make_failed(), make_job()

    assert csrf_client.post(retry_url(failed)).status_code == 403
    assert csrf_client.post(cancel_url(queued)).status_code == 403
    assert Job.objects.get(pk=failed.pk).status == Status.FAILED
    assert Job.objects.get(pk=queued.pk).status == Status.QUEUED


def test_operator__post_with_csrf_token_retries() -> None:
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_operator())
    job = make_failed()
    page = csrf_client.get(PAGE)
    token = csrf_client.cookies["csrftoken"].value

    response = csrf_client.post(
        retry_url(job), {"csrfmiddlewaretoken": token, "next": f"{PAGE}?status=failed"}
    )

    assert response.status_code == 302
    assert response["Location"] == f"{PAGE}?status=failed"  # back to the same filters
    assert page.status_code == 200
    assert Job.objects.get(pk=job.pk).status == Status.QUEUED


def test_retry_and_cancel__refuse_get(client: Client) -> None:
    client.force_login(make_operator())
    job = make_failed()

    assert client.get(retry_url(job)).status_code == 405
    assert Job.objects.get(pk=job.pk).status == Status.FAILED


def test_retry__redirect_ignores_a_foreign_next(client: Client) -> None:
    client.force_login(make_operator())
    job = make_failed()

    response = client.post(retry_url(job), {"next": "https://evil.example/"})

    assert response["Location"] == f"{PAGE}{job.pk}/change/"


def test_retry__of_a_missing_job_is_404(client: Client) -> None:
    client.force_login(make_operator())

    assert client.post(f"{PAGE}999999/retry/").status_code == 404


@pytest.mark.parametrize("url", ["/admin/platform/jobattempt/", "/admin/platform/worker/"])
def test_attempts_and_workers__are_read_only_pages_for_viewers(client: Client, url: str) -> None:
    make_failed()
    client.force_login(make_user("clerk"))
    assert client.get(url).status_code == 403

    client.force_login(make_viewer())
    page = client.get(url)

    assert page.status_code == 200
    assert client.get(f"{url}add/").status_code == 403
