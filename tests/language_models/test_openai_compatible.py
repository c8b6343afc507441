"""The OpenAI-compatible provider against a local server answering like the Chat
Completions API: the request it sends, what it records, and each failure's error class."""

from __future__ import annotations

import tracemalloc

import pytest

import language_models
from jobs import PermanentError, RetryableError
from language_models import Prompt
from tests.support.model_server import ModelServer, Reply
from tests.support.servers import DrippingServer, gzip_bomb

PROMPT = Prompt("test_plan", "Write a test plan.", ("Changed file: app/models.py", "CI status: success"))
JSON_PROMPT = Prompt(
    "decisions.mine", 'Answer with JSON only: {"decisions": []}.', ("[1] pr:1#2: We adopt Go.",)
)


def test_openai__sends_the_prompt_and_records_model_tokens_and_latency(openai_model: ModelServer):
    openai_model.script(Reply.answer("1. Run the model tests.", input_tokens=120, output_tokens=30))
    answer = language_models.complete(PROMPT)
    assert answer.text == "1. Run the model tests."
    assert (answer.provider, answer.model, answer.input_tokens, answer.output_tokens) == (
        "openai",
        "test-model",
        120,
        30,
    )
    assert answer.written_by_model and answer.latency_ms >= 0
    request = openai_model.received[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-key"
    assert request.body["model"] == "test-model" and request.body["temperature"] == 0
    assert request.body["max_tokens"] == 1024  # MODEL_MAX_OUTPUT_TOKENS
    assert request.prompt == "Write a test plan.\n\n- Changed file: app/models.py\n- CI status: success"
    assert answer.prompt == request.prompt
    assert "response_format" not in request.body


def test_openai__a_json_prompt_asks_for_json_and_the_answer_is_validated(openai_model: ModelServer):
    openai_model.script(Reply.answer('{"decisions": [{"title": "Adopt Go", "evidence": [1]}]}'))
    answer, value = language_models.complete_json(JSON_PROMPT, lambda value: value["decisions"])
    assert value == [{"title": "Adopt Go", "evidence": [1]}]
    assert openai_model.received[0].body["response_format"] == {"type": "json_object"}


def test_openai__json_mode_can_be_switched_off_for_servers_without_it(openai_model: ModelServer, settings):
    settings.OPENAI_JSON_MODE = False
    openai_model.script(Reply.answer('{"decisions": []}'))
    language_models.complete_json(JSON_PROMPT, dict)
    assert "response_format" not in openai_model.received[0].body


def test_openai__an_answer_that_is_not_the_json_asked_for_is_a_retryable_invalid_answer(
    openai_model: ModelServer,
):
    openai_model.script(Reply.answer("Sure! The decisions are: adopt Go."))
    with pytest.raises(language_models.InvalidAnswer, match="not JSON") as caught:
        language_models.complete_json(JSON_PROMPT, dict)
    assert isinstance(caught.value, RetryableError)


def test_openai__a_body_that_is_not_a_chat_completion_is_an_invalid_answer(openai_model: ModelServer):
    openai_model.script(Reply.body(b"<html>gateway</html>"))
    with pytest.raises(language_models.InvalidAnswer, match="not a chat completion"):
        language_models.complete(PROMPT)


def test_openai__a_timeout_is_a_retryable_model_timeout(openai_model: ModelServer, settings):
    settings.MODEL_TIMEOUT = 0.3
    openai_model.script(Reply.never())
    with pytest.raises(language_models.ModelTimeout, match=r"timed out after 0\.3s") as caught:
        language_models.complete(PROMPT)
    assert isinstance(caught.value, RetryableError)
    assert len(openai_model.received) == 1  # reached the server, and was not retried by the client


def test_openai__a_429_is_rate_limited_with_the_services_retry_after(openai_model: ModelServer):
    openai_model.script(Reply.error(429, "Rate limit reached", retry_after="7"))
    with pytest.raises(language_models.ModelRateLimited, match="asked for 7s") as caught:
        language_models.complete(PROMPT)
    assert caught.value.retry_after == 7.0
    # Also a retryable model error, so code that catches the family catches it.
    assert isinstance(caught.value, RetryableError)
    assert len(openai_model.received) == 1


def test_openai__retry_after_ms_is_read_too(openai_model: ModelServer):
    openai_model.script(Reply.error(429, retry_after_ms="1500"))
    with pytest.raises(language_models.ModelRateLimited) as caught:
        language_models.complete(PROMPT)
    assert caught.value.retry_after == 1.5


def test_openai__a_server_error_is_retryable(openai_model: ModelServer):
    openai_model.script(Reply.error(503, "overloaded"))
    with pytest.raises(language_models.ModelUnavailable, match="HTTP 503") as caught:
        language_models.complete(PROMPT)
    assert isinstance(caught.value, RetryableError)


def test_openai__refused_credentials_fail_at_once_naming_the_setting_not_the_key(openai_model: ModelServer):
    openai_model.script(Reply.error(401, "Incorrect API key provided: sk-test-key"))
    with pytest.raises(language_models.ModelRejected) as caught:
        language_models.complete(PROMPT)
    assert isinstance(caught.value, PermanentError)
    assert "OPENAI_API_KEY" in str(caught.value) and "sk-test" not in str(caught.value)


def test_openai__an_unknown_model_fails_at_once_naming_it(openai_model: ModelServer):
    openai_model.script(Reply.error(404, "The model does not exist"))
    with pytest.raises(language_models.ModelRejected, match=r"OPENAI_MODEL \(test-model\)"):
        language_models.complete(PROMPT)


def test_openai__an_unreachable_server_is_retryable(openai_model: ModelServer, settings):
    openai_model.close()
    with pytest.raises(language_models.ModelUnavailable, match="could not be reached"):
        language_models.complete(PROMPT)


def test_openai__prompt_and_answer_are_bounded(openai_model: ModelServer, settings):
    settings.MODEL_MAX_PROMPT_CHARS = 1000
    settings.MODEL_MAX_OUTPUT_TOKENS = 16
    openai_model.script(Reply.answer("x" * 5000))
    answer = language_models.complete(Prompt("x", "I.", tuple("fact " * 30 for _ in range(50))))
    sent = openai_model.received[0]
    assert len(sent.prompt) < 1000 + 80 and "more facts left out" in sent.prompt
    assert sent.body["max_tokens"] == 16
    assert answer.truncated and len(answer.text) == 16 * 8


def test_openai__an_empty_answer_is_invalid(openai_model: ModelServer):
    openai_model.script(Reply.answer("   "))
    with pytest.raises(language_models.InvalidAnswer, match="empty"):
        language_models.complete(PROMPT)


def test_openai__a_server_without_authentication_needs_no_key(openai_model: ModelServer, settings):
    settings.OPENAI_API_KEY = ""
    openai_model.script(Reply.answer("ok"))
    assert language_models.complete(PROMPT).text == "ok"


def test_openai__a_compressed_answer_is_stopped_at_the_limit_once_decoded(
    openai_model: ModelServer, settings
):
    settings.HTTP_MAX_RESPONSE_BYTES = 1024 * 1024
    openai_model.script(Reply(raw=gzip_bomb(200 * 1024 * 1024), headers={"Content-Encoding": "gzip, gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(language_models.InvalidAnswer, match="more than 1,048,576 bytes") as caught:
            language_models.complete(PROMPT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # a few pieces of the answer, never the whole of it
    assert "HTTP_MAX_RESPONSE_BYTES" in str(caught.value)


def test_openai__an_answer_over_the_limit_is_not_read_whole(openai_model: ModelServer, settings):
    settings.HTTP_MAX_RESPONSE_BYTES = 64 * 1024
    openai_model.script(Reply.answer("word " * 50_000))  # 250 kB of text in one chat completion
    with pytest.raises(language_models.InvalidAnswer, match="more than 65,536 bytes"):
        language_models.complete(PROMPT)


def test_openai__a_service_dripping_its_answer_times_out_at_the_deadline(openai_model: ModelServer, settings):
    settings.MODEL_TIMEOUT = 1.0
    server = DrippingServer(interval=0.05)
    settings.OPENAI_BASE_URL = f"{server.url}/v1"
    try:
        with pytest.raises(language_models.ModelTimeout, match="timed out after 1.0s"):
            language_models.complete(PROMPT)
        assert server.accepted
    finally:
        server.close()
