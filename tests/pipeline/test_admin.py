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


# --- the email's jobs, and acting on them where the operator looks ------------------------------


def _retrying(email: EmailMessage, *, tries: int = 1) -> Job:
    """The email failed and its job waits for its next try, as the engine leaves it."""
    from datetime import timedelta

    from django.utils import timezone

    EmailMessage.objects.filter(pk=email.pk).update(status="failed")
    job = jobs_for("email.process", email_id=email.pk).first()
    Job.objects.filter(pk=job.pk).update(
        status="queued",
        attempts=tries,
        error="ModelCallError: timed out",
        run_at=timezone.now() + timedelta(minutes=2),
    )
    job.refresh_from_db()
    return job


def test_email_list__a_failed_email_says_when_its_job_tries_again_or_that_it_failed_for_good(
    admin_client, processed
):
    from django.utils import timezone

    job = _retrying(processed)
    url = reverse("admin:pipeline_emailmessage_changelist")
    at = timezone.localtime(job.run_at).strftime("%H:%M")

    assert f"Failed — retrying 2/3 at {at}" in admin_client.get(url).text

    Job.objects.filter(pk=job.pk).update(status="failed", attempts=3)
    assert "Failed for good after 3/3 tries" in admin_client.get(url).text


def test_email_page__an_open_run_whose_job_failed_for_good_says_so(admin_client, processed):
    job = jobs_for("email.process", email_id=processed.pk).first()
    Job.objects.filter(pk=job.pk).update(status="failed", attempts=3)
    processed.runs.update(closed_at=None, outcome="open")

    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[processed.pk])).text

    assert (
        f'open — its job <a href="/admin/platform/job/{job.pk}/change/">#{job.pk}</a> failed for good' in page
    )


def test_reprocess_button__queues_one_job_links_to_it_and_records_who_pressed_it(admin_client, processed):
    from django.contrib.admin.models import LogEntry

    EmailMessage.objects.filter(pk=processed.pk).update(needs_review=True)
    button = reverse("admin:pipeline_emailmessage_job_button", args=[processed.pk, "reprocess"])
    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[processed.pk])).text
    assert f'action="{button}"' in page

    for _ in range(2):
        response = admin_client.post(button, follow=True)

    job = Job.objects.get(dedupe_key=f"email:{processed.pk}", status="queued")
    assert (
        f'<a href="/admin/platform/job/{job.pk}/change/">email.process job #{job.pk}</a> is queued.'
        in response.text
    )
    assert not EmailMessage.objects.get(pk=processed.pk).needs_review
    entries = LogEntry.objects.filter(object_id=str(processed.pk), content_type__model="emailmessage")
    assert [entry.get_change_message() for entry in entries] == [
        f"Reprocess: queued email.process job #{job.pk}"
    ] * 2
    assert {entry.user for entry in entries} == {admin_client.user}


def test_reprocess_button__needs_the_change_permission(client, processed):
    button = reverse("admin:pipeline_emailmessage_job_button", args=[processed.pk, "reprocess"])
    viewer = _staff(client, "viewer", "pipeline.view_emailmessage")
    assert (
        "job-button"
        not in viewer.get(reverse("admin:pipeline_emailmessage_change", args=[processed.pk])).text
    )
    assert viewer.post(button).status_code == 403


def test_needs_review__shows_only_when_it_is_set(admin_client, processed):
    listing = reverse("admin:pipeline_emailmessage_changelist")
    page = reverse("admin:pipeline_emailmessage_change", args=[processed.pk])
    assert "needs review" not in admin_client.get(listing).text
    assert 'name="needs_review"' not in admin_client.get(page).text

    EmailMessage.objects.filter(pk=processed.pk).update(needs_review=True)
    assert '<span class="pl-review">needs review</span>' in admin_client.get(listing).text
    assert 'name="needs_review"' in admin_client.get(page).text


def test_email_page__labels_are_a_list_not_json(admin_client, processed):
    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[processed.pk])).text
    assert '<ul class="pl-labels"><li class="pl-label">meeting</li></ul>' in page


def test_model_call_switch__says_what_off_means_and_links_the_sweep_it_queues(admin_client):
    from django.contrib.admin.models import LogEntry

    url = admin_client.get(reverse("admin:pipeline_modelcallswitch_changelist"))["Location"]
    assert "stop at “parsed”" in admin_client.get(url).text

    off = admin_client.post(url, {"enabled": ""}, follow=True)
    assert "Model calls are off" in off.text
    on = admin_client.post(url, {"enabled": "on"}, follow=True)

    sweep = Job.objects.get(type="email.sweep")
    assert f'email.sweep job <a href="/admin/platform/job/{sweep.pk}/change/">#{sweep.pk}</a>' in on.text
    assert LogEntry.objects.filter(content_type__model="modelcallswitch", user=admin_client.user).count() == 2
