"""The platform's one way to call a language model, for the pipeline and the workspaces.

``MODEL_PROVIDER`` chooses the provider: ``local`` (the embedded default, an extractive
digest that says it was written by no model), ``bedrock`` (Amazon Bedrock's Converse API)
or ``openai`` (any OpenAI-compatible Chat Completions endpoint). Callers build a
``Prompt`` from recorded data and get an ``Answer`` that says who wrote it, the tokens it
cost and how long it took:

    answer = language_models.complete(Prompt("test_plan", "Write a test plan …", facts))
    answer, value = language_models.complete_json(prompt, validate)   # a model only

Every failure is a ``ModelError``: retryable ``ModelCallError``s (timeout, unreachable,
rate limited, an answer that is not what was asked for) and permanent ``ModelRejected``
(bad credentials, unknown model). Prompts and answers are bounded in size
(``MODEL_MAX_PROMPT_CHARS``, ``MODEL_MAX_OUTPUT_TOKENS``), and never logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.conf import settings

from language_models import local
from language_models.answers import CHARS_PER_TOKEN, LOCAL, Answer, Completion, bound, parse_json
from language_models.errors import (
    InvalidAnswer,
    ModelCallError,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelTimeout,
    ModelUnavailable,
)
from language_models.prompts import Prompt

__all__ = [
    "LOCAL",
    "Answer",
    "InvalidAnswer",
    "ModelCallError",
    "ModelError",
    "ModelRateLimited",
    "ModelRejected",
    "ModelTimeout",
    "ModelUnavailable",
    "Prompt",
    "complete",
    "complete_json",
    "digest",
    "is_local",
    "provider_name",
]

PROVIDERS = ("local", "bedrock", "openai")
logger = logging.getLogger("language_models")


def provider_name() -> str:
    return settings.MODEL_PROVIDER


def is_local() -> bool:
    """Whether answers come from the local digest rather than a model: a caller that needs
    an interpretation (JSON, a classification) uses its own rules instead."""
    return provider_name() == LOCAL


def complete(prompt: Prompt) -> Answer:
    """The configured provider's answer to ``prompt``; a ``ModelError`` when it fails."""
    provider = provider_name()
    max_tokens = prompt.max_output_tokens or settings.MODEL_MAX_OUTPUT_TOKENS
    text = prompt.render(settings.MODEL_MAX_PROMPT_CHARS)
    started = time.monotonic()
    completion = _call(provider, prompt, text, max_tokens)
    latency_ms = round((time.monotonic() - started) * 1000)
    output, truncated = bound(completion.text, max_tokens * CHARS_PER_TOKEN)
    if not output.strip():
        raise InvalidAnswer(
            f"The {provider} model's answer is empty (stop reason {completion.stop_reason!r})."
        )
    answer = Answer(
        text=output,
        provider=provider,
        model=completion.model,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        latency_ms=latency_ms,
        truncated=truncated,
        prompt=text,
    )
    if answer.written_by_model:
        logger.info(
            "%s answered by %s %s: %s input and %s output tokens, %d ms%s",
            prompt.task,
            provider,
            answer.model,
            answer.input_tokens,
            answer.output_tokens,
            latency_ms,
            ", cut to its size limit" if truncated else "",
        )
    return answer


def complete_json[T](prompt: Prompt, validate: Callable[[dict[str, Any]], T]) -> tuple[Answer, T]:
    """A model's JSON answer, read and checked by ``validate`` (which raises InvalidAnswer
    for a shape it does not accept). The local digest writes no JSON: check ``is_local()``
    first and use the caller's own rules there."""
    if is_local():
        raise ModelRejected(f"{prompt.task} asks for JSON, which the local digest does not write.")
    answer = complete(replace(prompt, json=True))
    if answer.truncated:
        raise InvalidAnswer(
            "The model's answer is longer than its size limit, so it is not the JSON asked for."
        )
    return answer, validate(parse_json(answer.text))


def digest(prompt: Prompt) -> str:
    """The local extractive digest of ``prompt``, whatever the provider: for work that
    must not wait on a model (it says in its first line that no model wrote it)."""
    return local.digest(prompt)


def _call(provider: str, prompt: Prompt, text: str, max_tokens: int) -> Completion:
    if provider == LOCAL:
        return local.complete(prompt)
    # The providers' clients (httpx, TLS) are imported by the first call that needs them:
    # every process that imports this package (a worker, for the errors) need not.
    if provider == "bedrock":
        from language_models import bedrock

        return bedrock.complete(prompt, text, max_tokens)
    if provider == "openai":
        from language_models import openai_compatible

        return openai_compatible.complete(prompt, text, max_tokens)
    raise ModelRejected(f"Setting MODEL_PROVIDER names no known provider ({', '.join(PROVIDERS)}).")
