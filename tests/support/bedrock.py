"""Amazon Bedrock through botocore's Stubber: the client the model provider uses (for
Converse and for embeddings' InvokeModel), and answers shaped as Bedrock gives them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

import language_models
from language_models import bedrock_embeddings
from tests.support.model_server import Received


def converse_answer(text: str, input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    """A Converse answer whose message is ``text``."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens, "totalTokens": 15},
        "metrics": {"latencyMs": 12},
    }


@contextmanager
def stubbed_bedrock(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """MODEL_PROVIDER=bedrock with its client behind a Stubber the test fills (the embedding
    provider's client too)."""
    settings.MODEL_PROVIDER = "bedrock"
    settings.BEDROCK_MODEL_ID = "test-model"
    client = boto3.client(
        "bedrock-runtime", region_name="eu-central-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    monkeypatch.setattr(language_models.bedrock, "bedrock_client", lambda: client)
    monkeypatch.setattr(bedrock_embeddings, "embedding_client", lambda: client)
    with Stubber(client) as stubber:
        yield stubber


def invoke_answer(body: dict[str, Any]) -> dict[str, Any]:
    """An InvokeModel answer whose body is ``body`` as JSON."""
    import io
    import json

    from botocore.response import StreamingBody

    data = json.dumps(body).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def use_test_credentials(monkeypatch) -> None:
    """The credentials ``x``/``x`` in the environment, as ``signed_as_sent`` checks them,
    read by a client made now: boto3's default session keeps the credentials it found
    first (an earlier test's), and a client cached for a local server's port (which may
    come round again) keeps its session's."""
    import boto3

    from language_models import bedrock

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    bedrock._client.cache_clear()


def signed_as_sent(received: Received, url: str, region: str) -> bool:
    """Whether the request the server ``url`` received carries the SigV4 signature of what
    arrived (path, signed headers, body), with the test credentials ``x``/``x``: what
    Bedrock checks."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    authorization = received.headers["authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    request = AWSRequest(
        method="POST",
        url=url + received.path,
        data=received.data,
        headers={name: received.headers[name] for name in signed},
    )
    request.context["timestamp"] = received.headers["x-amz-date"]
    signer = SigV4Auth(Credentials("x", "x"), "bedrock", region)
    signature = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return authorization.endswith(f"Signature={signature}")
