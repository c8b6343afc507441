"""The pipeline classifies through the platform's model module: with
``MODEL_PROVIDER=openai``, against a local server answering like Chat Completions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

import jobs
from jobs import RetryableError
from pipeline import intake, process
from pipeline.errors import ModelCallError, ModelRateLimited
from pipeline.models import ErrorLogEntry, Status
from tests.pipeline import corpus
from tests.support.model_server import ModelServer, Reply

pytestmark = pytest.mark.django_db


def test_openai__labels_the_email_and_records_the_model(openai_model: ModelServer):
    openai_model.script(Reply.answer('{"labels": ["report", "meeting"]}'))
    email = intake.receive(corpus.multipart_with_attachments()).email
    assert process.process_email(email.pk) == "labelled"
    email.refresh_from_db()
    assert email.labels == ["meeting", "report"] and email.classification.model == "test-model"
    sent = openai_model.received[0]
    assert sent.body["max_tokens"] == 200 and sent.body["response_format"] == {"type": "json_object"}
    assert sent.prompt.startswith(f"Subject: {email.subject}")


def test_openai__a_429_postpones_the_job_and_leaves_the_email_waiting(openai_model: ModelServer):
    openai_model.script(Reply.error(429, retry_after="5"))
    email = intake.receive(corpus.plain()).email
    before = timezone.now()
    with pytest.raises(ModelRateLimited) as caught:
        process.process_email(email.pk, job_id=3)
    # A jobs.RetryLater for when the service allows: the engine puts the job back then
    # without using an attempt.
    assert isinstance(caught.value, jobs.RetryLater)
    assert before + timedelta(seconds=4) < caught.value.at < timezone.now() + timedelta(seconds=6)
    email.refresh_from_db()
    assert email.status == Status.PARSED and email.runs.get().is_open
    assert ErrorLogEntry.objects.get().error_class == "pipeline.errors.ModelRateLimited"


def test_openai__refused_credentials_stay_a_retryable_model_call_error_in_the_pipeline(
    openai_model: ModelServer,
):
    openai_model.script(Reply.error(401))
    email = intake.receive(corpus.plain()).email
    with pytest.raises(ModelCallError, match="OPENAI_API_KEY") as caught:
        process.process_email(email.pk)
    assert type(caught.value) is ModelCallError and isinstance(caught.value, RetryableError)
