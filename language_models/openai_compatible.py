"""Any OpenAI-compatible Chat Completions endpoint through the official ``openai`` client
(``MODEL_PROVIDER=openai``): OpenAI itself, or a model server of your own (vLLM, llama.cpp's
server, Ollama, LiteLLM …) at ``OPENAI_BASE_URL``.

Settings: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` (may be empty for a server that needs
none), ``OPENAI_MODEL``, ``OPENAI_JSON_MODE`` (send ``response_format`` for JSON answers),
``MODEL_TIMEOUT`` (a total deadline for each call, however slowly the server answers). An
answer larger than ``HTTP_MAX_RESPONSE_BYTES`` once decoded is an invalid answer, stopped
as it streams (``language_models.transport``). The client does not retry: the job engine
retries, with its backoff.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from language_models.answers import Completion
from language_models.errors import (
    InvalidAnswer,
    ModelError,
    ModelRejected,
    ModelTimeout,
    ModelUnavailable,
    rate_limited,
)
from language_models.prompts import Prompt
from language_models.transport import AnswerTooLarge, BoundedTransport

PROVIDER = "openai"
# The client insists on a key; a self-hosted server without authentication ignores this one.
NO_KEY = "no-key-configured"


@lru_cache(maxsize=4)
def bounded_client(base_url: str, api_key: str, timeout: float, max_bytes: int) -> Any:
    """An ``openai`` client for chat and embeddings alike: no retries, a whole-call deadline
    and an answer bound."""
    from openai import OpenAI

    # MODEL_TIMEOUT is the whole call's deadline, and the answer is counted once decoded.
    http_client = httpx.Client(transport=BoundedTransport(timeout, max_bytes), timeout=timeout)
    # The client takes an httpx.Client as well as its own httpx2 one, but its hints name only
    # httpx2's: the transport that bounds a whole request is httpx's.
    return OpenAI(
        base_url=base_url,
        api_key=api_key or NO_KEY,
        timeout=timeout,
        max_retries=0,
        http_client=cast(Any, http_client),
    )


def openai_client() -> Any:
    """The client of the current settings (one per process and settings)."""
    return bounded_client(
        settings.OPENAI_BASE_URL,
        settings.OPENAI_API_KEY,
        settings.MODEL_TIMEOUT,
        settings.HTTP_MAX_RESPONSE_BYTES,
    )


def unreadable(exc: Exception, where: str) -> ModelError | None:
    """The model error for an answer the transport stopped (larger than the limit once
    decoded, or in an encoding it cannot read), found behind the client's connection
    error ``exc``; None for another connection error. ``where`` names the service."""
    cause = exc.__cause__
    if isinstance(cause, AnswerTooLarge):
        return InvalidAnswer(
            f"The {where} answered with more than {cause.limit:,} bytes (HTTP_MAX_RESPONSE_BYTES)."
        )
    if isinstance(cause, httpx.DecodingError):
        return InvalidAnswer(f"The {where} answered with something that cannot be read: {cause}")
    return None


def endpoint() -> str:
    """The base URL without anything secret in it, for messages: scheme, host and port."""
    parts = urlsplit(settings.OPENAI_BASE_URL)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def complete(prompt: Prompt, text: str, max_tokens: int) -> Completion:
    import openai

    request: dict[str, Any] = {
        "model": settings.OPENAI_MODEL,
        "messages": [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": text},
        ],
        # max_tokens, not max_completion_tokens: the name every compatible server knows.
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    if prompt.json and settings.OPENAI_JSON_MODE:
        request["response_format"] = {"type": "json_object"}
    try:
        completion = openai_client().chat.completions.create(**request)
    except openai.APITimeoutError as exc:
        raise ModelTimeout(
            f"The model call to {endpoint()} timed out after {settings.MODEL_TIMEOUT}s."
        ) from exc
    except openai.APIStatusError as exc:
        raise status_error(exc) from exc
    except openai.APIConnectionError as exc:
        raise unreadable(exc, f"model service at {endpoint()}") or ModelUnavailable(
            f"The model service at {endpoint()} could not be reached: {exc}."
        ) from exc
    except (openai.APIError, ValueError) as exc:  # a 2xx whose body is not a chat completion
        raise InvalidAnswer(
            f"The model service at {endpoint()} answered something that is not a chat completion: {exc}."
        ) from exc
    return read_completion(completion)


def status_error(exc: Any) -> ModelError:
    """The model error for an HTTP error status (an ``openai.APIStatusError``)."""
    status = exc.status_code
    if status == 429:
        return rate_limited(PROVIDER, f"HTTP 429 from {endpoint()}", retry_after(exc.response.headers))
    if status in (401, 403):
        # The service's own message can quote part of the key: it is not repeated.
        return ModelRejected(
            f"The model service at {endpoint()} refused the credentials (HTTP {status}): check OPENAI_API_KEY."
        )
    if status >= 500:
        return ModelUnavailable(f"The model service at {endpoint()} failed (HTTP {status}): {exc.message}.")
    return ModelRejected(
        f"The model service at {endpoint()} refused the request (HTTP {status}): {exc.message}. "
        f"Check OPENAI_MODEL ({settings.OPENAI_MODEL})."
    )


def retry_after(headers: Any) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (OpenAI's) or ``retry-after`` (seconds)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers[name]) * scale)
        except (KeyError, TypeError, ValueError):
            continue
    return None


def read_completion(completion: Any) -> Completion:
    choices = getattr(completion, "choices", None)
    if not choices:
        raise InvalidAnswer(f"The model service at {endpoint()} answered with no choices.")
    content = getattr(choices[0].message, "content", None)
    if not isinstance(content, str):
        raise InvalidAnswer(f"The model service at {endpoint()} answered with no text.")
    usage = getattr(completion, "usage", None)
    return Completion(
        text=content,
        model=str(getattr(completion, "model", "") or settings.OPENAI_MODEL),
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        stop_reason=str(choices[0].finish_reason or ""),
    )
