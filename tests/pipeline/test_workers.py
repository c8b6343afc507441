"""Acceptance: the corpus of issue 4 imported and processed by real ``manage.py runworker``
processes on the database (PostgreSQL or MariaDB); S3 blob storage against a moto server over HTTP; a model timeout
retried with backoff by the engine."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path

import boto3
import pytest
from django.core.management import call_command
from django.utils import timezone

from jobs.models import Job
from pipeline import intake
from pipeline.models import EmailMessage, ErrorLogEntry, Origin, PipelineRun, Status
from tests.pipeline import corpus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_corpus__every_email_is_processed_by_real_workers_and_ends_in_its_status(
    start_worker, tmp_path: Path
):
    cases = corpus.cases(huge=True)
    folder = tmp_path / "mail"
    folder.mkdir()
    for index, case in enumerate(cases):
        (folder / f"{index:02d}_{case.name}.eml").write_bytes(case.raw)
    out = StringIO()
    call_command("import_mail", str(folder), stdout=out, stderr=StringIO())
    assert out.getvalue().strip() == f"{len(cases)} imported, 0 already present, 0 unreadable, 0 too large"

    worker = start_worker("--burst", "--queue", "mail:2")
    assert worker.wait(timeout=180) == 0, worker.log()

    emails = {Path(email.source).stem.split("_", 1)[1]: email for email in EmailMessage.objects.all()}
    assert len(emails) == len(cases), "an email was lost"
    assert set(Job.objects.filter(type="email.process").values_list("status", flat=True)) == {"succeeded"}
    assert not PipelineRun.objects.filter(closed_at__isnull=True).exists()
    assert not ErrorLogEntry.objects.exists()
    # plain and its second delivery: whichever ran first is the origin, the other its copy.
    pair = sorted([emails.pop("plain"), emails.pop("duplicate")], key=lambda email: email.status)
    assert [email.status for email in pair] == [Status.DUPLICATE, Status.LABELLED]
    assert pair[0].origin_id == pair[1].pk
    for case in cases:
        if case.name in emails:
            assert (case.name, emails[case.name].status) == (case.name, case.status)
    assert Origin.objects.count() == len(cases) - 1

    huge = emails["huge"].attachments.get()
    assert huge.size == 20 * 1024 * 1024 and not huge.converted
    assert "Quarterly revenue" in emails["multipart"].attachments.get(filename="report.pdf").text
    assert any("CloseBoundaryNotFound" in defect for defect in emails["truncated_mime"].parsed.defects)
    assert emails["garbage"].parsed.defects
    assert emails["latin1"].subject == "Rechnung für März"
    assert emails["shift_jis_rfc2047"].subject == "会議の議題 meeting"
    assert Origin.objects.get(email=emails["no_message_id"]).key.startswith("sha256:")


def test_s3_blob_storage__against_a_moto_server(start_worker, moto_reset: str, settings):
    bucket = "pipeline-test-blobs"
    boto3.client("s3", endpoint_url=moto_reset, region_name="eu-central-1").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"}
    )
    settings.STORAGES = {
        **settings.STORAGES,
        "blobs": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": moto_reset,
                "region_name": "eu-central-1",
                "location": "blobs",
            },
        },
    }
    raw = corpus.multipart_with_attachments()
    email = intake.receive(raw).email
    assert intake.receive(raw).created is False
    keys = [
        item["Key"]
        for item in boto3.client("s3", endpoint_url=moto_reset).list_objects_v2(Bucket=bucket)["Contents"]
    ]
    assert keys == [f"blobs/{email.blob_name}"]

    worker = start_worker(
        "--burst",
        "--queue",
        "mail:1",
        env={
            "BLOB_STORAGE": "s3",
            "AWS_STORAGE_BUCKET_NAME": bucket,
            "AWS_S3_ENDPOINT_URL": moto_reset,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        },
    )
    assert worker.wait(timeout=60) == 0, worker.log()
    email.refresh_from_db()
    assert email.status == Status.LABELLED
    assert "Quarterly revenue" in email.attachments.get(filename="report.pdf").text


def test_model_timeout__fails_the_email_and_the_engine_retries_with_backoff(start_worker, silent_server):
    email = intake.receive(corpus.plain()).email
    before = timezone.now()
    worker = start_worker(
        "--burst",
        "--queue",
        "mail:1",
        env={
            "MODEL_PROVIDER": "bedrock",
            "BEDROCK_ENDPOINT_URL": silent_server.url,
            "MODEL_TIMEOUT": "0.5",
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
        },
    )
    assert worker.wait(timeout=60) == 0, worker.log()
    job = Job.objects.get(type="email.process")
    assert job.status == "queued" and job.attempts == 1, job.error
    assert "ModelCallError" in job.error and "timed out" in job.error
    assert job.run_at >= before + timedelta(seconds=29)  # the first backoff step: 30 s
    email.refresh_from_db()
    assert email.status == Status.FAILED
    error = ErrorLogEntry.objects.get()
    assert (error.error_class, error.job_id, error.email_id) == (
        "pipeline.errors.ModelCallError",
        job.pk,
        email.pk,
    )
    run = email.runs.get()
    assert run.is_open and not run.classified


def test_model_calls_switched_on__the_sweep_job_finishes_the_waiting_emails(start_worker):
    from pipeline import switch

    switch.set_model_calls(False)
    emails = [intake.receive(raw).email for raw in (corpus.plain(), corpus.html_only(), corpus.latin1())]
    assert start_worker("--burst", "--queue", "mail:2").wait(timeout=60) == 0
    for email in emails:
        email.refresh_from_db()
        assert email.status == Status.PARSED and email.runs.get().is_open

    switch.set_model_calls(True)  # queues email.sweep at once
    worker = start_worker("--burst", "--queue", "mail:2")
    assert worker.wait(timeout=60) == 0, worker.log()
    assert Job.objects.get(type="email.sweep").status == "succeeded"
    for email in emails:
        email.refresh_from_db()
        run = email.runs.get()
        assert (email.status, run.is_open, run.sweep_count) == (Status.LABELLED, False, 1)


def test_hostile_mail__real_workers_finish_every_email_and_fail_the_unprocessable_ones_at_once(
    start_worker, tmp_path: Path
):
    hostile = {**corpus.bogus_charsets(), "nul_headers": corpus.nul_headers()}
    unprocessable = {"deep": corpus.nested(3000), "parts": corpus.many_parts(33_000)}
    folder = tmp_path / "mail"
    folder.mkdir()
    for name, raw in {**hostile, **unprocessable}.items():
        (folder / f"{name}.eml").write_bytes(raw)
    out = StringIO()
    call_command("import_mail", str(folder), stdout=out, stderr=StringIO())
    total = len(hostile) + len(unprocessable)
    assert out.getvalue().strip() == f"{total} imported, 0 already present, 0 unreadable, 0 too large"

    worker = start_worker("--burst", "--queue", "mail:2")
    assert worker.wait(timeout=180) == 0, worker.log()

    emails = {Path(email.source).stem: email for email in EmailMessage.objects.all()}
    assert set(emails) == set(hostile) | set(unprocessable), "an email was lost"
    for name in hostile:
        job = Job.objects.get(type="email.process", dedupe_key=f"email:{emails[name].pk}")
        assert (name, job.status, emails[name].status) == (name, "succeeded", Status.LABELLED), job.error
    for name, setting in (("deep", "PIPELINE_MAX_MIME_DEPTH"), ("parts", "PIPELINE_MAX_MIME_PARTS")):
        email = emails[name]
        job = Job.objects.get(type="email.process", dedupe_key=f"email:{email.pk}")
        # Failed at once: no second try, no backoff.
        assert (job.status, job.attempts) == ("failed", 1) and setting in job.error
        assert (email.status, email.needs_review) == (Status.FAILED, True)
        error = ErrorLogEntry.objects.get(email=email)
        assert error.error_class == "pipeline.errors.UnprocessableEmail" and setting in error.text
        assert error.job_id == job.pk
    assert ErrorLogEntry.objects.count() == 2


def test_timeouts__a_hung_process_or_sweep_job_is_stopped_by_the_worker(start_worker):
    from jobs import enqueue
    from tests.support.database import on_mariadb, raw_connection

    email = intake.receive(corpus.plain()).email
    enqueue("email.sweep", {})
    # Both jobs read the model-calls switch; while this lock is held they wait for ever
    # (MariaDB: a table's WRITE lock keeps other sessions from reading it; the session's
    # end releases it).
    with raw_connection(autocommit=False) as blocker:
        if on_mariadb():
            blocker.execute("LOCK TABLES pipeline_modelcallswitch WRITE")
        else:
            blocker.execute("LOCK TABLE pipeline_modelcallswitch IN ACCESS EXCLUSIVE MODE")
        worker = start_worker(
            "--burst",
            "--queue",
            "mail:2",
            env={"PIPELINE_PROCESS_TIMEOUT": "1", "PIPELINE_SWEEP_TIMEOUT": "1"},
        )
        assert worker.wait(timeout=60) == 0, worker.log()
        blocker.rollback()
    process_job = Job.objects.get(type="email.process", dedupe_key=f"email:{email.pk}")
    sweep_job = Job.objects.get(type="email.sweep")
    # email.process is retried after its backoff; email.sweep has one attempt.
    assert (process_job.status, process_job.attempts) == ("queued", 1)
    assert (sweep_job.status, sweep_job.attempts) == ("failed", 1)
    for job in (process_job, sweep_job):
        assert "JobTimeout" in job.error and "1s timeout" in job.error, job.error


def test_pdf_whose_pages_share_one_huge_content_stream__is_converted_with_bounded_work(start_worker):
    data = corpus.shared_stream_pdf()
    assert len(data) < 32 * 1024
    email = intake.receive(corpus.email_with_pdf(data)).email
    worker = start_worker("--burst", "--queue", "mail:1")
    # Unbounded, pypdf reads the shared stream again for each of the 40 pages, many seconds each.
    assert worker.wait(timeout=120) == 0, worker.log()
    email.refresh_from_db()
    assert email.status == Status.LABELLED
    attachment = email.attachments.get()
    assert attachment.converted
    assert "page 1 skipped" in attachment.note and "PIPELINE_PDF_PAGE_TOKENS" in attachment.note
    assert "39 pages repeat the content of an earlier page" in attachment.note
