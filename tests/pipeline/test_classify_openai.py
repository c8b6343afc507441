"""The pipeline classifies through the platform's model module: with
``MODEL_PROVIDER=openai``, against a local server answering like Chat Completions."""

from __future__ import annotations

import pytest

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


def test_openai__a_429_fails_the_try_as_a_rate_limited_model_call(openai_model: ModelServer):
    openai_model.script(Reply.error(429, retry_after="5"))
    email = intake.receive(corpus.plain()).email
    with pytest.raises(ModelRateLimited) as caught:
        process.process_email(email.pk, job_id=3)
    assert isinstance(caught.value, ModelCallError) and isinstance(caught.value, RetryableError)
    email.refresh_from_db()
    assert email.status == Status.FAILED
    assert ErrorLogEntry.objects.get().error_class == "pipeline.errors.ModelRateLimited"


def test_openai__refused_credentials_stay_a_retryable_model_call_error_in_the_pipeline(
    openai_model: ModelServer,
):
    openai_model.script(Reply.error(401))
    email = intake.receive(corpus.plain()).email
    with pytest.raises(ModelCallError, match="OPENAI_API_KEY") as caught:
        process.process_email(email.pk)
    assert type(caught.value) is ModelCallError and isinstance(caught.value, RetryableError)
