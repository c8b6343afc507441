"""Embeddings from Amazon Bedrock through boto3's ``InvokeModel`` (``EMBEDDING_PROVIDER=bedrock``).

Two families of model, told apart by the model id (``EMBEDDING_MODEL``):

- Amazon Titan Text Embeddings V2 (``amazon.titan-embed-text-v2:0``, the default): one text
  a request, ``{"inputText", "dimensions", "normalize"}``; 256, 512 or 1024 dimensions.
- Cohere Embed v3 (``cohere.embed-multilingual-v3``, ``cohere.embed-english-v3``): up to 96
  texts a request, ``{"texts", "input_type", "truncate"}``; 1024 dimensions.

The client is the chat provider's (``BEDROCK_ENDPOINT_URL``, ``AWS_REGION``, boto3's usual
credentials, the bounded transport), with ``EMBEDDING_TIMEOUT`` as each request's total
deadline and ``EMBEDDING_MAX_ANSWER_BYTES`` as the largest answer, counted once decoded and
stopped as it streams; its errors are read as the chat provider reads them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from django.conf import settings

from language_models import bedrock
from language_models.errors import (
    InvalidAnswer,
    ModelCallError,
    ModelRejected,
    ModelTimeout,
    ModelUnavailable,
)
from language_models.transport import AnswerTooLarge

PROVIDER = "bedrock"
COHERE_BATCH = 96


def is_cohere(model_id: str) -> bool:
    return model_id.split(".", 1)[-1].startswith("embed-") or model_id.startswith("cohere.")


def embedding_client() -> Any:
    """The bedrock-runtime client of the current settings, with the embedding bounds."""
    return bedrock._client(
        settings.BEDROCK_ENDPOINT_URL,
        settings.AWS_REGION,
        settings.EMBEDDING_TIMEOUT,
        settings.EMBEDDING_MAX_ANSWER_BYTES,
    )


def batch_limit() -> int:
    """Texts one request may carry for the configured model."""
    return COHERE_BATCH if is_cohere(settings.EMBEDDING_MODEL) else 1


def embed(texts: list[str], *, query: bool = False) -> list[list[float]]:
    model_id = settings.EMBEDDING_MODEL
    if is_cohere(model_id):
        body: dict[str, Any] = {
            "texts": texts,
            "input_type": "search_query" if query else "search_document",
            "truncate": "END",
        }
        return _vectors(_invoke(model_id, body), "embeddings", len(texts))
    vectors = []
    for text in texts:
        body = {"inputText": text, "dimensions": settings.EMBEDDING_DIMENSIONS, "normalize": True}
        vectors += _vectors(_invoke(model_id, body), "embedding", 1)
    return vectors


def _invoke(model_id: str, body: dict[str, Any]) -> dict[str, Any]:
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    try:
        response = embedding_client().invoke_model(
            modelId=model_id, body=json.dumps(body), contentType="application/json", accept="application/json"
        )
        raw = response["body"].read(settings.EMBEDDING_MAX_ANSWER_BYTES + 1)
    except AnswerTooLarge as exc:
        raise InvalidAnswer(too_large()) from exc
    except httpx.DecodingError as exc:
        raise InvalidAnswer(f"Bedrock's embedding answer cannot be read: {exc}") from exc
    except (httpx.TimeoutException, ReadTimeoutError, ConnectTimeoutError) as exc:
        raise ModelTimeout(f"Bedrock did not embed within {settings.EMBEDDING_TIMEOUT:g}s: {exc}.") from exc
    except (httpx.TransportError, EndpointConnectionError) as exc:
        raise ModelUnavailable(f"Bedrock could not be reached for embeddings: {exc}.") from exc
    except ClientError as exc:
        error = bedrock.service_error(exc)
        if isinstance(error, ModelRejected):
            raise ModelRejected(
                f"Bedrock refused the embedding request: {exc}. Check EMBEDDING_MODEL ({model_id}), "
                "AWS_REGION and the AWS credentials."
            ) from exc
        raise error from exc
    except BotoCoreError as exc:
        raise ModelCallError(f"The embedding call to Bedrock failed: {exc}.") from exc
    if len(raw) > settings.EMBEDDING_MAX_ANSWER_BYTES:  # a client that is not bounded (a stub)
        raise InvalidAnswer(too_large())
    try:
        answer = json.loads(raw)
    except ValueError:
        raise InvalidAnswer(f"Bedrock's embedding answer is not JSON: {raw[:120]!r}.") from None
    if not isinstance(answer, dict):
        raise InvalidAnswer("Bedrock's embedding answer is not a JSON object.")
    return answer


def too_large() -> str:
    return (
        f"Bedrock's embedding answer is larger than {settings.EMBEDDING_MAX_ANSWER_BYTES:,} bytes "
        "(EMBEDDING_MAX_ANSWER_BYTES)."
    )


def _vectors(answer: dict[str, Any], key: str, expected: int) -> list[list[float]]:
    found = answer.get(key)
    vectors = [found] if key == "embedding" else found
    if (
        not isinstance(vectors, list)
        or len(vectors) != expected
        or not all(isinstance(v, list) for v in vectors)
    ):
        raise InvalidAnswer(f"Bedrock's embedding answer has no {expected} vectors under {key!r}.")
    return vectors
