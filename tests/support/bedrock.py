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
