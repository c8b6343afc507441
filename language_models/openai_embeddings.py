"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint through the official
``openai`` client (``EMBEDDING_PROVIDER=openai``): OpenAI itself, or a server of your own
(vLLM, llama.cpp's server, Ollama, Text Embeddings Inference, LiteLLM …).

Settings: ``EMBEDDING_BASE_URL`` and ``EMBEDDING_API_KEY`` (by default the chat client's
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``), ``EMBEDDING_MODEL``, ``EMBEDDING_DIMENSIONS``
(sent as ``dimensions`` only when ``EMBEDDING_SEND_DIMENSIONS`` is on: many servers refuse
it), ``EMBEDDING_TIMEOUT`` (a total deadline for each request, however slowly the server
answers). The client does not retry: the pipeline decides what an unreachable service means.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from language_models.errors import (
    InvalidAnswer,
    ModelError,
    ModelRejected,
    ModelTimeout,
    ModelUnavailable,
    rate_limited,
)
from language_models.openai_compatible import bounded_client, retry_after, unreadable

PROVIDER = "openai"


def endpoint() -> str:
    """The base URL without anything secret in it, for messages: scheme, host and port."""
    parts = urlsplit(settings.EMBEDDING_BASE_URL)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def embed(texts: list[str]) -> list[list[float]]:
    import openai

    request: dict[str, Any] = {
        "model": settings.EMBEDDING_MODEL,
        "input": texts,
        # Floats, not the client's default base64: every compatible server speaks floats.
        "encoding_format": "float",
    }
    if settings.EMBEDDING_SEND_DIMENSIONS:
        request["dimensions"] = settings.EMBEDDING_DIMENSIONS
    client = bounded_client(
        settings.EMBEDDING_BASE_URL,
        settings.EMBEDDING_API_KEY,
        settings.EMBEDDING_TIMEOUT,
        settings.HTTP_MAX_RESPONSE_BYTES,
    )
    try:
        answer = client.embeddings.create(**request)
    except openai.APITimeoutError as exc:
        raise ModelTimeout(
            f"The embedding service at {endpoint()} did not answer within {settings.EMBEDDING_TIMEOUT:g}s."
        ) from exc
    except openai.APIStatusError as exc:
        raise status_error(exc) from exc
    except openai.APIConnectionError as exc:
        raise unreadable(exc, f"embedding service at {endpoint()}") or ModelUnavailable(
            f"The embedding service at {endpoint()} could not be reached: {exc}."
        ) from exc
    except (openai.APIError, ValueError) as exc:  # a 2xx whose body is not an embedding list
        raise InvalidAnswer(
            f"The embedding service at {endpoint()} answered something that is not a list of embeddings: {exc}."
        ) from exc
    return read_answer(answer, len(texts))


def status_error(exc: Any) -> ModelError:
    """The model error for an HTTP error status of the embedding service."""
    status = exc.status_code
    if status == 429:
        return rate_limited("embedding", f"HTTP 429 from {endpoint()}", retry_after(exc.response.headers))
    if status in (401, 403):
        # The service's own message can quote part of the key: it is not repeated.
        return ModelRejected(
            f"The embedding service at {endpoint()} refused the credentials (HTTP {status}): "
            "check EMBEDDING_API_KEY."
        )
    if status >= 500:
        return ModelUnavailable(f"The embedding service at {endpoint()} failed (HTTP {status}).")
    return ModelRejected(
        f"The embedding service at {endpoint()} refused the request (HTTP {status}): "
        f"{str(exc.message)[:300]}. Check EMBEDDING_MODEL ({settings.EMBEDDING_MODEL})."
    )


def read_answer(answer: Any, expected: int) -> list[list[float]]:
    items = getattr(answer, "data", None)
    if not isinstance(items, list) or len(items) != expected:
        raise InvalidAnswer(
            f"The embedding service at {endpoint()} answered {len(items) if isinstance(items, list) else 'no'} "
            f"embeddings for {expected} texts."
        )
    ordered = sorted(items, key=lambda item: getattr(item, "index", 0))
    vectors = [getattr(item, "embedding", None) for item in ordered]
    if not all(isinstance(vector, list) for vector in vectors):
        raise InvalidAnswer(
            f"The embedding service at {endpoint()} answered an embedding that is not a list."
        )
    return vectors  # type: ignore[return-value]
