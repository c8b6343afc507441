"""The Bedrock provider: Converse through botocore's Stubber (each error Bedrock answers
with) and over real HTTP against a local server answering like Converse, through the
bounded transport: its errors, an answer over the size limit (plain, or a gzip bomb) and an
answer dripped past the deadline."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

import language_models
from jobs import PermanentError, RetryableError
from language_models import Prompt
from tests.support.bedrock import converse_answer, signed_as_sent, stubbed_bedrock, use_test_credentials
from tests.support.model_server import ModelServer, Reply
from tests.support.servers import DrippingServer, FloodingServer, gzip_bomb
from tests.support.waiting import wait_for

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


@pytest.fixture
def bedrock_http(settings, model_server: ModelServer, monkeypatch) -> ModelServer:
    """MODEL_PROVIDER=bedrock pointed at the local server, with a client of its own."""
    use_test_credentials(monkeypatch)
    settings.MODEL_PROVIDER = "bedrock"
    settings.BEDROCK_ENDPOINT_URL = model_server.url
    settings.BEDROCK_MODEL_ID = "test-model"
    settings.MODEL_TIMEOUT = 5.0
    return model_server


def test_bedrock__over_http_against_a_local_converse_server(bedrock_http: ModelServer, settings):
    bedrock_http.script(Reply.answer("A Django project.", input_tokens=77, output_tokens=9))
    answer = language_models.complete(PROMPT)
    assert (answer.text, answer.input_tokens, answer.output_tokens) == ("A Django project.", 77, 9)
    request = bedrock_http.received[0]
    assert request.path == "/model/test-model/converse"
    assert request.prompt == "Summarise it.\n\n- Kind: django-project"
    # Sent by the bounded transport, not botocore's: what arrived is what was signed.
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert signed_as_sent(request, bedrock_http.url, settings.AWS_REGION)


def test_bedrock__a_gzipped_answer_within_the_limit_is_read(bedrock_http: ModelServer):
    raw = gzip.compress(json.dumps(converse_answer("A Django project.")).encode())
    bedrock_http.script(Reply(raw=raw, headers={"Content-Encoding": "gzip"}))
    assert language_models.complete(PROMPT).text == "A Django project."


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (
            Reply.error(429, "slow down", retry_after="7", x_amzn_ErrorType="ThrottlingException"),
            language_models.ModelRateLimited,
        ),
        (
            Reply.error(503, "busy", x_amzn_ErrorType="ServiceUnavailableException"),
            language_models.ModelUnavailable,
        ),
        (Reply.error(400, "bad", x_amzn_ErrorType="ValidationException"), language_models.ModelRejected),
    ],
)
def test_bedrock__over_http_each_error_it_answers_is_its_model_error(
    bedrock_http: ModelServer, reply: Reply, error: type
):
    bedrock_http.script(reply)
    with pytest.raises(error) as caught:
        language_models.complete(PROMPT)
    if error is language_models.ModelRateLimited:
        assert caught.value.retry_after == 7.0  # type: ignore[attr-defined]
    assert len(bedrock_http.received) == 1  # botocore does not retry: the engine does


def test_bedrock__an_answer_over_the_limit_is_not_read_whole(bedrock_http: ModelServer, settings):
    settings.HTTP_MAX_RESPONSE_BYTES = 64 * 1024
    server = FloodingServer()  # 64 MiB, without a Content-Length
    settings.BEDROCK_ENDPOINT_URL = server.url
    try:
        with pytest.raises(language_models.InvalidAnswer, match="more than 65,536 bytes") as caught:
            language_models.complete(PROMPT)
        assert "HTTP_MAX_RESPONSE_BYTES" in str(caught.value)
        assert isinstance(caught.value, RetryableError)
        wait_for(server.cut.is_set, message="the client to hang up before the end of the answer")
    finally:
        server.close()


def test_bedrock__a_compressed_answer_is_stopped_at_the_limit_once_decoded(
    bedrock_http: ModelServer, settings
):
    settings.HTTP_MAX_RESPONSE_BYTES = 1024 * 1024
    bomb = gzip_bomb(200 * 1024 * 1024)  # 200 MB of zeros, gzipped twice: a few kilobytes
    bedrock_http.script(Reply(raw=bomb, headers={"Content-Encoding": "gzip, gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(language_models.InvalidAnswer, match="more than 1,048,576 bytes"):
            language_models.complete(PROMPT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # a few pieces of the answer, never the whole of it


def test_bedrock__a_service_dripping_its_answer_times_out_at_the_deadline(
    bedrock_http: ModelServer, settings
):
    settings.MODEL_TIMEOUT = 0.5  # each byte arrives well within it: the whole answer never does
    server = DrippingServer(interval=0.05)
    settings.BEDROCK_ENDPOINT_URL = server.url
    try:
        with pytest.raises(language_models.ModelTimeout, match="timed out after 0.5s") as caught:
            language_models.complete(PROMPT)
        assert isinstance(caught.value, RetryableError)
        assert server.accepted
    finally:
        server.close()
