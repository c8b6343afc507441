"""Embeddings, beside chat in the platform's one model-provider module.

``EMBEDDING_PROVIDER`` chooses who turns text into vectors: ``local`` (the embedded
default, WordLlama's static model shipped in the ``wordllama`` package: no service),
``bedrock`` (Titan Text Embeddings V2 or Cohere Embed through ``InvokeModel``) or ``openai``
(any OpenAI-compatible ``/embeddings`` endpoint):

    model = embeddings.current_model()            # provider, name, dimensions, what it is
    vectors = embeddings.embed_documents(chunks)  # one vector per text, in batches
    vector = embeddings.embed_query("parcel on its way")

Requests carry at most ``EMBEDDING_BATCH_SIZE`` texts and, with
``EMBEDDING_REQUESTS_PER_MINUTE`` set, are spaced so that this process sends no more than
that many a minute (a limit per process: the fleet-wide rate limits of the engine will take
it over). Every vector is checked: as many as asked for, each of ``EMBEDDING_DIMENSIONS``
finite numbers. Failures are the model errors of chat: ``ModelTimeout``,
``ModelUnavailable`` (unreachable, 5xx), ``ModelRateLimited`` (429), ``InvalidAnswer``, and
``ModelRejected`` for what another try cannot fix (a bad model name, a refused input).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from language_models import bedrock_embeddings, openai_embeddings, static_embedding
from language_models.errors import InvalidAnswer, ModelRejected

PROVIDERS = ("local", "bedrock", "openai")


@dataclass(frozen=True)
class EmbeddingModel:
    provider: str
    name: str
    dimensions: int
    description: str

    @property
    def embedded(self) -> bool:
        """Whether it runs in this process (no service to reach)."""
        return self.provider == static_embedding.PROVIDER


def current_model() -> EmbeddingModel:
    provider = settings.EMBEDDING_PROVIDER
    dimensions = settings.EMBEDDING_DIMENSIONS
    if provider == static_embedding.PROVIDER:
        return EmbeddingModel(provider, static_embedding.MODEL, dimensions, static_embedding.DESCRIPTION)
    if provider == bedrock_embeddings.PROVIDER:
        where = "Amazon Bedrock"
    elif provider == openai_embeddings.PROVIDER:
        where = f"the OpenAI-compatible endpoint at {openai_embeddings.endpoint()}"
    else:
        raise ModelRejected(f"Setting EMBEDDING_PROVIDER names no known provider ({', '.join(PROVIDERS)}).")
    return EmbeddingModel(
        provider, settings.EMBEDDING_MODEL, dimensions, f"{settings.EMBEDDING_MODEL} on {where}"
    )


def embed_documents(texts: Sequence[str]) -> list[list[float]]:
    """One vector per text (texts to be found), in batches."""
    return _embed(list(texts), query=False)


def embed_query(text: str) -> list[float]:
    """The vector of a search (some models embed a question unlike a document)."""
    return _embed([text], query=True)[0]


def _embed(texts: list[str], *, query: bool) -> list[list[float]]:
    model = current_model()
    size = settings.EMBEDDING_BATCH_SIZE
    if model.provider == bedrock_embeddings.PROVIDER:
        size = min(size, bedrock_embeddings.batch_limit())
    vectors: list[list[float]] = []
    for start in range(0, len(texts), size):
        batch = texts[start : start + size]
        if model.provider == static_embedding.PROVIDER:
            found = static_embedding.embed(batch, model.dimensions)
        else:
            _pacer.wait(settings.EMBEDDING_REQUESTS_PER_MINUTE)
            if model.provider == bedrock_embeddings.PROVIDER:
                found = bedrock_embeddings.embed(batch, query=query)
            else:
                found = openai_embeddings.embed(batch)
        vectors += _checked(found, len(batch), model)
    return vectors


def _checked(vectors: list[list[float]], expected: int, model: EmbeddingModel) -> list[list[float]]:
    if len(vectors) != expected:
        raise InvalidAnswer(
            f"The {model.provider} embedding model answered {len(vectors)} vectors for {expected} texts."
        )
    for vector in vectors:
        if len(vector) != model.dimensions:
            # Another try gives the same size: the setting and the model disagree.
            raise ModelRejected(
                f"The {model.provider} embedding model {model.name} answered vectors of {len(vector)} "
                f"dimensions, not {model.dimensions}: check EMBEDDING_DIMENSIONS."
            )
        if not all(isinstance(x, int | float) and math.isfinite(x) for x in vector):
            raise InvalidAnswer(
                f"The {model.provider} embedding model answered a vector that is not all numbers."
            )
    return vectors


class _Pacer:
    """Spaces requests so that this process sends at most ``per_minute`` a minute."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self, per_minute: int) -> None:
        if per_minute <= 0:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + 60.0 / per_minute
        if start > now:
            time.sleep(start - now)


_pacer = _Pacer()
