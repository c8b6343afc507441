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
        "email.process jobs",
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
