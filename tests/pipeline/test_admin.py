"""The pipeline's admin: list and filters, an email's page, reprocess, the switch."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from jobs import jobs_for
from jobs.models import Job
from pipeline import intake, process
from pipeline.models import EmailMessage, ModelCallSwitch

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-for-tests")
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def processed() -> EmailMessage:
    from tests.pipeline import corpus

    email = intake.receive(corpus.multipart_with_attachments()).email
    process.process_email(email.pk)
    jobs_for("email.process", email_id=email.pk).update(status="succeeded")
    copy = intake.receive(corpus.truncated_mime()).email
    process.process_email(copy.pk)
    return email


def test_email_list__filters_by_status_and_review(admin_client, processed):
    url = reverse("admin:pipeline_emailmessage_changelist")
    page = admin_client.get(url, {"status__exact": "labelled"})
    assert page.status_code == 200
    assert "Quarterly report and meeting agenda" in page.text
    assert admin_client.get(url, {"needs_review__exact": "1"}).context["cl"].result_count == 0


def test_email_page__shows_runs_artifacts_errors_and_jobs(admin_client, processed):
    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[processed.pk]))
    assert page.status_code == 200
    text = page.text.lower()
    for expected in (
        "report.pdf",
        "quarterly revenue grew",
        "local-rules",
        "labelled",
        "recent jobs",
        "email.process",
        "succeeded",
    ):
        assert expected in text


def test_reprocess_action__queues_one_job_per_email(admin_client, processed):
    EmailMessage.objects.update(needs_review=True)
    ids = list(EmailMessage.objects.values_list("pk", flat=True))
    url = reverse("admin:pipeline_emailmessage_changelist")
    admin_client.post(url, {"action": "reprocess", "_selected_action": ids})
    admin_client.post(url, {"action": "reprocess", "_selected_action": ids})
    for email_id in ids:
        assert Job.objects.filter(dedupe_key=f"email:{email_id}", status="queued").count() == 1
    assert not EmailMessage.objects.filter(needs_review=True).exists()


def test_model_call_switch__records_who_and_when_and_switching_on_queues_the_sweep(admin_client):
    changelist = admin_client.get(reverse("admin:pipeline_modelcallswitch_changelist"))
    assert changelist.status_code == 302
    url = changelist["Location"]
    admin_client.post(url, {"enabled": ""})
    row = ModelCallSwitch.objects.get()
    assert not row.enabled and row.changed_by == admin_client.user and row.changed_at is not None
    assert not Job.objects.filter(type="email.sweep").exists()
    admin_client.post(url, {"enabled": "on"})
    row.refresh_from_db()
    assert row.enabled
    assert Job.objects.filter(type="email.sweep", status="queued").count() == 1
    assert "ops" in admin_client.get(url).text


# --- permissions and bounded pages ------------------------------------------------------------


def _staff(client, username: str, *perms: str):
    """A logged-in staff user with exactly these permissions (``app_label.codename``)."""
    from django.contrib.auth.models import Permission
    from django.db.models import Q

    user = get_user_model().objects.create_user(username, password="pw-for-tests", is_staff=True)
    wanted = Q(pk__in=[])
    for perm in perms:
        app_label, codename = perm.split(".")
        wanted |= Q(content_type__app_label=app_label, codename=codename)
    user.user_permissions.set(Permission.objects.filter(wanted))
    client.force_login(user)
    return client


def test_reprocess_action__needs_the_change_permission(client, processed):
    url = reverse("admin:pipeline_emailmessage_changelist")
    viewer = _staff(client, "viewer", "pipeline.view_emailmessage")
    page = viewer.get(url)
    assert page.status_code == 200 and 'value="reprocess"' not in page.text
    viewer.post(url, {"action": "reprocess", "_selected_action": [processed.pk]})
    assert not Job.objects.filter(dedupe_key=f"email:{processed.pk}", status="queued").exists()

    editor = _staff(client, "editor", "pipeline.view_emailmessage", "pipeline.change_emailmessage")
    assert 'value="reprocess"' in editor.get(url).text
    editor.post(url, {"action": "reprocess", "_selected_action": [processed.pk]})
    assert Job.objects.filter(dedupe_key=f"email:{processed.pk}", status="queued").count() == 1


def test_email_page__shows_job_errors_only_to_viewers_of_the_jobs_page(client, processed):
    Job.objects.filter(dedupe_key=f"email:{processed.pk}").update(
        status="failed", error="RuntimeError: token=abc123 rejected"
    )
    url = reverse("admin:pipeline_emailmessage_change", args=[processed.pk])

    page = _staff(client, "viewer", "pipeline.view_emailmessage").get(url)
    assert page.status_code == 200
    assert "recent jobs" in page.text.lower() and "email.process" in page.text and "failed" in page.text
    assert "token=abc123" not in page.text

    page = _staff(client, "operator", "pipeline.view_emailmessage", "platform.view_jobs").get(url)
    assert "token=abc123" in page.text


def test_email_page__lists_the_first_rows_of_attachments_headers_and_defects_and_links_to_all_attachments(
    admin_client, processed, settings
):
    from pipeline.models import Attachment

    settings.PIPELINE_ADMIN_ROWS = 100
    processed.attachments.all().delete()
    Attachment.objects.bulk_create(
        Attachment(
            email=processed, position=n, filename=f"file-{n:05d}.txt", content_type="text/plain", size=1
        )
        for n in range(10_000)
    )
    processed.parsed.headers = [[f"X-Trace-{n:05d}", "hop"] for n in range(1000)]
    processed.parsed.defects = [f"Defect {n:05d}" for n in range(1000)]
    processed.parsed.save()
    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[processed.pk]))
    assert page.status_code == 200
    assert "X-Trace-00099" in page.text and "X-Trace-00100" not in page.text
    assert "… and 900 more header lines." in page.text and "… and 900 more defects." in page.text
    assert "file-00099.txt" in page.text and "file-00100.txt" not in page.text
    assert "10,000 attachments: the first 100 are listed below, and 9,900 more" in page.text
    every = reverse("admin:pipeline_attachment_changelist") + f"?email__id__exact={processed.pk}"
    assert f'href="{every}"' in page.text.replace("&amp;", "&")

    listing = admin_client.get(every + "&p=100")  # the last page of 100
    assert listing.status_code == 200
    assert "file-09999.txt" in listing.text and "file-09899.txt" not in listing.text
    assert listing.context["cl"].result_count == 10_000
