"""The Bedrock provider: Converse through botocore's Stubber (each error Bedrock answers
with) and, once, over real HTTP against a local server answering like Converse."""

from __future__ import annotations

import pytest

import language_models
from jobs import PermanentError, RetryableError
from language_models import Prompt
from tests.support.bedrock import converse_answer, stubbed_bedrock
from tests.support.model_server import ModelServer, Reply

PROMPT = Prompt("repository.analyse", "Summarise it.", ("Kind: django-project",))


@pytest.fixture
def bedrock(settings, monkeypatch):
    with stubbed_bedrock(settings, monkeypatch) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def test_bedrock__sends_the_prompt_and_records_model_and_tokens(bedrock):
    bedrock.add_response(
        "converse",
        converse_answer("A Django project.", 321, 54),
        expected_params={
            "modelId": "test-model",
            "system": [{"text": PROMPT.system}],
            "messages": [{"role": "user", "content": [{"text": "Summarise it.\n\n- Kind: django-project"}]}],
            "inferenceConfig": {"maxTokens": 1024, "temperature": 0.0},
        },
    )
    answer = language_models.complete(PROMPT)
    assert (answer.text, answer.provider, answer.model) == ("A Django project.", "bedrock", "test-model")
    assert (answer.input_tokens, answer.output_tokens) == (321, 54)


def test_bedrock__an_answer_that_is_not_the_json_asked_for_is_invalid(bedrock):
    bedrock.add_response("converse", converse_answer("I think the decisions are …"))
    with pytest.raises(language_models.InvalidAnswer, match="not JSON") as caught:
        language_models.complete_json(PROMPT, dict)
    assert isinstance(caught.value, RetryableError)


def test_bedrock__throttling_is_rate_limited(bedrock):
    bedrock.add_client_error(
        "converse",
        service_error_code="ThrottlingException",
        http_status_code=429,
        response_meta={"HTTPHeaders": {"retry-after": "3"}},
    )
    with pytest.raises(language_models.ModelRateLimited, match="ThrottlingException") as caught:
        language_models.complete(PROMPT)
    assert caught.value.retry_after == 3.0 and isinstance(caught.value, RetryableError)


@pytest.mark.parametrize(
    ("code", "status", "error"),
    [
        ("ModelTimeoutException", 408, language_models.ModelTimeout),
        ("ServiceUnavailableException", 503, language_models.ModelUnavailable),
        ("InternalServerException", 500, language_models.ModelUnavailable),
    ],
)
def test_bedrock__transient_service_errors_are_retryable(bedrock, code, status, error):
    bedrock.add_client_error("converse", service_error_code=code, http_status_code=status)
    with pytest.raises(error) as caught:
        language_models.complete(PROMPT)
    assert isinstance(caught.value, RetryableError)


@pytest.mark.parametrize(
    ("code", "status"),
    [("AccessDeniedException", 403), ("ValidationException", 400), ("ResourceNotFoundException", 404)],
)
def test_bedrock__refusals_fail_at_once_naming_the_settings(bedrock, code, status):
    bedrock.add_client_error("converse", service_error_code=code, http_status_code=status)
    with pytest.raises(language_models.ModelRejected, match="BEDROCK_MODEL_ID") as caught:
        language_models.complete(PROMPT)
    assert isinstance(caught.value, PermanentError)


def test_bedrock__a_response_without_text_is_invalid(bedrock):
    bedrock.add_response(
        "converse",
        {
            "output": {"message": {"role": "assistant", "content": []}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 0, "totalTokens": 1},
            "metrics": {"latencyMs": 1},
        },
    )
    with pytest.raises(language_models.InvalidAnswer, match="empty"):
        language_models.complete(PROMPT)


def test_bedrock__over_http_against_a_local_converse_server(settings, model_server: ModelServer, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    settings.MODEL_PROVIDER = "bedrock"
    settings.BEDROCK_ENDPOINT_URL = model_server.url
    settings.BEDROCK_MODEL_ID = "test-model"
    model_server.script(Reply.answer("A Django project.", input_tokens=77, output_tokens=9))
    answer = language_models.complete(PROMPT)
    assert (answer.text, answer.input_tokens, answer.output_tokens) == ("A Django project.", 77, 9)
    request = model_server.received[0]
    assert request.path == "/model/test-model/converse"
    assert request.prompt == "Summarise it.\n\n- Kind: django-project"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256")
