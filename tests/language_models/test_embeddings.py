"""Embeddings: the embedded model loaded from its wheel with no network; any
OpenAI-compatible /embeddings endpoint against a local server answering like it (each way
it can fail: a closed port, a 503, a timeout, a slow drip, a 4xx, a 429); Bedrock's Titan
and Cohere models through botocore's Stubber, and over real HTTP against a local server
answering like InvokeModel (an answer over EMBEDDING_MAX_ANSWER_BYTES, plain or a gzip
bomb, and one dripped past EMBEDDING_TIMEOUT)."""

from __future__ import annotations

import math
import socket
import tracemalloc
from collections.abc import Iterator

import pytest

import language_models
from jobs import PermanentError, RetryableError
from language_models import embeddings, static_embedding
from tests.support.bedrock import invoke_answer, signed_as_sent, stubbed_bedrock, use_test_credentials
from tests.support.model_server import ModelServer, Reply, embedding
from tests.support.servers import DrippingServer, FloodingServer, SilentServer, closed_port_url, gzip_bomb
from tests.support.waiting import wait_for


class SocketOpened(OSError):
    pass


@pytest.fixture
def no_network(monkeypatch) -> Iterator[list[object]]:
    """Every attempt to resolve a name or open a connection fails, and is recorded."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise SocketOpened(f"a connection was attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield attempts


def test_local__loads_from_the_wheels_own_files_without_opening_a_socket(no_network, settings):
    model = static_embedding.load(256)  # not the process's cached copy: a load of its own
    vectors = model.embed(["Invoice 42 is due", "Rechnung 42 ist fällig"], norm=True)
    assert vectors.shape == (2, 256)
    assert no_network == []


def test_local__the_packages_own_loader_reaches_for_the_network_which_is_why_it_is_not_used(
    no_network, tmp_path
):
    from wordllama import WordLlama

    with pytest.raises(FileNotFoundError):
        WordLlama.load("l2_supercat", cache_dir=tmp_path)  # looks for tokenizer/, ships tokenizers/
    assert no_network, "wordllama 0.4 found its tokenizer after all: the guard has nothing to prove"


def test_local__unit_vectors_of_the_configured_size_that_place_words_by_meaning(settings):
    settings.EMBEDDING_PROVIDER = "local"
    settings.EMBEDDING_DIMENSIONS = 256
    invoice, bill, parcel = embeddings.embed_documents(["invoice", "bill", "parcel"])
    assert len(invoice) == 256 and math.isclose(sum(x * x for x in invoice), 1.0, rel_tol=1e-4)
    near = sum(a * b for a, b in zip(invoice, bill, strict=True))
    far = sum(a * b for a, b in zip(invoice, parcel, strict=True))
    assert near > far
    assert embeddings.embed_query("invoice") == pytest.approx(invoice)
    model = embeddings.current_model()
    assert (model.provider, model.name, model.embedded) == ("local", "wordllama-l2-supercat", True)
    assert "static embedding model shipped inside the wordllama package" in model.description


def test_local__a_size_the_model_was_not_trained_for_is_refused(settings):
    with pytest.raises(language_models.ModelRejected, match="EMBEDDING_DIMENSIONS"):
        static_embedding.load(100)


# --- OpenAI-compatible ---------------------------------------------------------------------


@pytest.fixture
def openai_embeddings(settings, model_server: ModelServer) -> ModelServer:
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_BASE_URL = model_server.openai_url
    settings.EMBEDDING_API_KEY = "sk-embedding-key"
    settings.EMBEDDING_MODEL = "test-embedding"
    settings.EMBEDDING_DIMENSIONS = 8
    settings.EMBEDDING_TIMEOUT = 0.5
    settings.EMBEDDING_SEND_DIMENSIONS = False
    return model_server


def test_openai__sends_batches_and_reads_the_vectors_in_order(openai_embeddings: ModelServer, settings):
    settings.EMBEDDING_BATCH_SIZE = 2
    openai_embeddings.responder = lambda request: Reply.vectors(8)
    texts = ["one", "two", "three", "four", "five"]
    vectors = embeddings.embed_documents(texts)
    assert vectors == [pytest.approx(embedding(text, 8)) for text in texts]
    assert [request.body["input"] for request in openai_embeddings.received] == [
        ["one", "two"],
        ["three", "four"],
        ["five"],
    ]
    first = openai_embeddings.received[0]
    assert first.path == "/v1/embeddings"
    assert first.headers["authorization"] == "Bearer sk-embedding-key"
    assert first.body["model"] == "test-embedding" and first.body["encoding_format"] == "float"
    assert "dimensions" not in first.body


def test_openai__dimensions_are_sent_when_asked_for(openai_embeddings: ModelServer, settings):
    settings.EMBEDDING_SEND_DIMENSIONS = True
    openai_embeddings.script(Reply.vectors(8))
    embeddings.embed_query("parcel")
    assert openai_embeddings.received[0].body["dimensions"] == 8


def test_openai__vectors_of_another_size_are_refused_for_good(openai_embeddings: ModelServer):
    openai_embeddings.script(Reply.vectors(12))
    with pytest.raises(
        language_models.ModelRejected, match="12 dimensions, not 8: check EMBEDDING_DIMENSIONS"
    ):
        embeddings.embed_documents(["a"])


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        (Reply.error(503, "overloaded"), language_models.ModelUnavailable, "failed \\(HTTP 503\\)"),
        (Reply.error(429, "slow down", retry_after="7"), language_models.ModelRateLimited, "asked for 7s"),
        (Reply.error(400, "model 'nope' not found"), language_models.ModelRejected, "Check EMBEDDING_MODEL"),
        (Reply.error(401, "bad key sk-embedding-key"), language_models.ModelRejected, "EMBEDDING_API_KEY"),
        (Reply.body(b"<html>gateway</html>"), language_models.InvalidAnswer, "not a list of embeddings"),
    ],
)
def test_openai__each_answer_of_the_service_is_its_error(
    openai_embeddings: ModelServer, reply: Reply, error: type, message: str
):
    openai_embeddings.script(reply)
    with pytest.raises(error, match=message) as caught:
        embeddings.embed_documents(["a"])
    assert "sk-embedding-key" not in str(caught.value)
    permanent = error is language_models.ModelRejected
    assert isinstance(caught.value, PermanentError if permanent else RetryableError)
    assert len(openai_embeddings.received) == 1  # the client does not retry


def test_openai__a_closed_port_is_unavailable(openai_embeddings: ModelServer, settings):
    settings.EMBEDDING_BASE_URL = f"{closed_port_url()}/v1"
    with pytest.raises(language_models.ModelUnavailable, match="could not be reached"):
        embeddings.embed_documents(["a"])


@pytest.mark.parametrize("server_class", [SilentServer, DrippingServer])
def test_openai__a_silent_or_dripping_service_times_out_within_the_deadline(
    openai_embeddings: ModelServer, settings, server_class: type
):
    server = server_class()
    settings.EMBEDDING_BASE_URL = f"{server.url}/v1"
    try:
        with pytest.raises(language_models.ModelTimeout, match="did not answer within 0.5s"):
            embeddings.embed_documents(["a"])
        assert server.accepted  # it reached the server
    finally:
        server.close()


def test_pacing__requests_are_spaced_to_the_rate_per_minute(monkeypatch):
    slept: list[float] = []
    clock = iter([100.0, 100.0, 100.0])
    monkeypatch.setattr(embeddings.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(embeddings.time, "sleep", slept.append)
    pacer = embeddings._Pacer()
    for _ in range(3):
        pacer.wait(120)  # one every 0.5 s
    assert slept == [0.5, 1.0]
    pacer.wait(0)  # no limit: no wait, no clock read
    assert slept == [0.5, 1.0]


# --- Bedrock ---------------------------------------------------------------------------------


@pytest.fixture
def bedrock(settings, monkeypatch):
    with stubbed_bedrock(settings, monkeypatch) as stubber:
        settings.EMBEDDING_PROVIDER = "bedrock"
        settings.EMBEDDING_DIMENSIONS = 4
        yield stubber
        stubber.assert_no_pending_responses()


def test_bedrock__titan_embeds_one_text_a_request(bedrock, settings):
    settings.EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"
    for text, vector in (("one", [1, 0, 0, 0]), ("two", [0, 1, 0, 0])):
        bedrock.add_response(
            "invoke_model",
            invoke_answer({"embedding": vector, "inputTextTokenCount": 1}),
            expected_params={
                "modelId": "amazon.titan-embed-text-v2:0",
                "body": f'{{"inputText": "{text}", "dimensions": 4, "normalize": true}}',
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
    assert embeddings.embed_documents(["one", "two"]) == [[1, 0, 0, 0], [0, 1, 0, 0]]


def test_bedrock__cohere_embeds_a_batch_and_tells_a_query_from_a_document(bedrock, settings):
    settings.EMBEDDING_MODEL = "cohere.embed-multilingual-v3"
    bedrock.add_response("invoke_model", invoke_answer({"embeddings": [[1, 0, 0, 0], [0, 0, 1, 0]]}))
    bedrock.add_response("invoke_model", invoke_answer({"embeddings": [[0, 0, 0, 1]]}))
    assert embeddings.embed_documents(["a", "b"]) == [[1, 0, 0, 0], [0, 0, 1, 0]]
    assert embeddings.embed_query("c") == [0, 0, 0, 1]


@pytest.mark.parametrize(
    ("code", "status", "error"),
    [
        ("ValidationException", 400, language_models.ModelRejected),
        ("ThrottlingException", 429, language_models.ModelRateLimited),
        ("ServiceUnavailableException", 503, language_models.ModelUnavailable),
    ],
)
def test_bedrock__each_error_it_answers_is_its_model_error(bedrock, settings, code, status, error):
    settings.EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"
    bedrock.add_client_error("invoke_model", service_error_code=code, http_status_code=status)
    with pytest.raises(error) as caught:
        embeddings.embed_documents(["a"])
    if error is language_models.ModelRejected:
        assert "Check EMBEDDING_MODEL (amazon.titan-embed-text-v2:0)" in str(caught.value)


@pytest.fixture
def bedrock_http(settings, model_server: ModelServer, monkeypatch) -> ModelServer:
    """EMBEDDING_PROVIDER=bedrock pointed at the local server, with a client of its own."""
    use_test_credentials(monkeypatch)
    settings.EMBEDDING_PROVIDER = "bedrock"
    settings.BEDROCK_ENDPOINT_URL = model_server.url
    settings.EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"
    settings.EMBEDDING_DIMENSIONS = 8
    settings.EMBEDDING_TIMEOUT = 5.0
    return model_server


def test_bedrock__over_http_against_a_local_invoke_model_server(bedrock_http: ModelServer, settings):
    bedrock_http.responder = lambda request: Reply.vectors(8)
    assert embeddings.embed_documents(["one", "two"]) == [
        pytest.approx(embedding("one", 8)),
        pytest.approx(embedding("two", 8)),
    ]
    first = bedrock_http.received[0]
    assert first.path == "/model/amazon.titan-embed-text-v2%3A0/invoke"
    assert first.body == {"inputText": "one", "dimensions": 8, "normalize": True}
    assert first.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert signed_as_sent(first, bedrock_http.url, settings.AWS_REGION)  # the model id's ":" too


def test_bedrock__an_answer_over_the_limit_is_not_read_whole(bedrock_http: ModelServer, settings):
    settings.EMBEDDING_MAX_ANSWER_BYTES = 64 * 1024
    # An error answer: botocore read those whole, however large, where it bounded a vector's.
    server = FloodingServer(status=500)  # 64 MiB, without a Content-Length
    settings.BEDROCK_ENDPOINT_URL = server.url
    try:
        with pytest.raises(language_models.InvalidAnswer, match="larger than 65,536 bytes") as caught:
            embeddings.embed_documents(["a"])
        assert "EMBEDDING_MAX_ANSWER_BYTES" in str(caught.value)
        wait_for(server.cut.is_set, message="the client to hang up before the end of the answer")
    finally:
        server.close()


def test_bedrock__a_compressed_answer_is_stopped_at_the_limit_once_decoded(
    bedrock_http: ModelServer, settings
):
    settings.EMBEDDING_MAX_ANSWER_BYTES = 1024 * 1024
    bomb = gzip_bomb(200 * 1024 * 1024)  # 200 MB of zeros, gzipped twice: a few kilobytes
    bedrock_http.script(Reply(raw=bomb, headers={"Content-Encoding": "gzip, gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(language_models.InvalidAnswer, match="larger than 1,048,576 bytes"):
            embeddings.embed_documents(["a"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # a few pieces of the answer, never the whole of it


def test_bedrock__a_service_dripping_its_answer_times_out_at_the_deadline(
    bedrock_http: ModelServer, settings
):
    settings.EMBEDDING_TIMEOUT = 0.5  # each byte arrives well within it: the whole answer never does
    server = DrippingServer(interval=0.05)
    settings.BEDROCK_ENDPOINT_URL = server.url
    try:
        with pytest.raises(language_models.ModelTimeout, match="did not embed within 0.5s") as caught:
            embeddings.embed_documents(["a"])
        assert isinstance(caught.value, RetryableError)
        assert server.accepted
    finally:
        server.close()
