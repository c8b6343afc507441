"""The vector index: email chunks as points in Qdrant, through ``qdrant-client``.

A Qdrant server at ``QDRANT_URL`` (with ``QDRANT_API_KEY``) in production; unset, Qdrant's
local mode in the folder ``QDRANT_PATH`` (the embedded default, under ``var/``).

**Local mode admits one process at a time**: the folder is locked while a client has it
open, and each process holds its own copy of the points in memory, so a client kept open
would shut every other process out and never see their writes. The demo's one
``runworker`` has two child processes that index emails and the admin is a third, so here
every operation takes its turn: it waits for the folder's lock (at most
``QDRANT_LOCAL_WAIT`` seconds, then ``VectorIndexUnavailable``, "busy"), opens the folder,
does its one read or write, and closes it again. Opening reads every point from disk, which
costs milliseconds for a demo's emails and seconds past tens of thousands of chunks
(``python -m bench.index``): a fleet, or anything larger, uses a server.

One collection per embedding model and dimension (``collection_name``), so vectors of two
models are never compared. A point's id is derived from its email and chunk number, so a
retry or a reprocess writes the same points again, never duplicates; its payload carries
the email's id, chunk number, labels, sender domain and received date, for filters.

Errors: unreachable, a timeout (``QDRANT_TIMEOUT``, a total deadline per request), a 5xx or
a 429, or the local folder busy past its wait → ``VectorIndexUnavailable``; another 4xx
(refused credentials, a request Qdrant cannot take) → ``IndexRefused``.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from language_models.embeddings import EmbeddingModel
from pipeline.errors import IndexRefused, VectorIndexUnavailable

# Ids of points: uuid5 of the email and chunk in this namespace (any fixed UUID would do).
POINT_NAMESPACE = uuid.UUID("3f0c6d2e-5b8a-4c43-9a51-7c2f1e0b9d44")
UPSERT_BATCH = 256
PAYLOAD_INDEXES = {
    "email_id": "integer",
    "chunk": "integer",
    "labels": "keyword",
    "sender_domain": "keyword",
    "received_at": "datetime",
}


@dataclass(frozen=True)
class Hit:
    email_id: int
    score: float


@dataclass(frozen=True)
class Filters:
    """What a search may be narrowed to (every given condition holds)."""

    labels: tuple[str, ...] = ()  # any of them
    sender_domain: str = ""
    received_after: datetime | None = None
    received_before: datetime | None = None
    exclude_email_ids: tuple[int, ...] = ()


NO_FILTERS = Filters()


def collection_name(model: EmbeddingModel) -> str:
    """``emails_local_wordllama-l2-supercat_256``: one per provider, model and dimension."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", f"{model.provider}_{model.name}".lower()).strip("-")
    return f"{settings.QDRANT_COLLECTION_PREFIX}_{slug}_{model.dimensions}"[:255]


def point_id(email_id: int, chunk: int) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, f"email:{email_id}:chunk:{chunk}"))


def where() -> str:
    """Where the index lives, for messages and the admin (no credentials)."""
    if settings.QDRANT_URL:
        parts = urlsplit(settings.QDRANT_URL)
        return f"Qdrant server at {parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"
    return f"Qdrant local mode in {settings.QDRANT_PATH}"


# --- access ---------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _server(url: str, api_key: str, timeout: float) -> Any:
    from qdrant_client import QdrantClient

    from language_models.transport import BoundedTransport

    return QdrantClient(
        url=url,
        api_key=api_key or None,
        timeout=math.ceil(timeout),
        check_compatibility=False,  # no request at construction: the first call tells
        transport=BoundedTransport(timeout),
    )


@contextmanager
def session() -> Iterator[Any]:
    """A client for one operation; every failure to reach the index is translated."""
    with _translated():
        if settings.QDRANT_URL:
            yield _server(settings.QDRANT_URL, settings.QDRANT_API_KEY, settings.QDRANT_TIMEOUT)
            return
        with _local_turn():
            from qdrant_client import QdrantClient

            client = QdrantClient(path=str(settings.QDRANT_PATH))
            try:
                yield client
            finally:
                client.close()


@contextmanager
def _local_turn() -> Iterator[None]:
    import portalocker

    settings.QDRANT_PATH.mkdir(parents=True, exist_ok=True)
    # A lock file of our own beside Qdrant's: Qdrant's lock is taken without waiting.
    turn = portalocker.Lock(
        settings.QDRANT_PATH.with_name(settings.QDRANT_PATH.name + ".turn"),
        mode="a",
        timeout=settings.QDRANT_LOCAL_WAIT,
        check_interval=0.02,
        flags=portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING,
    )
    try:
        turn.acquire()
    except portalocker.LockException:
        raise VectorIndexUnavailable(
            f"The local vector index ({where()}) was busy for {settings.QDRANT_LOCAL_WAIT:g}s: local "
            "mode admits one process at a time, and another held it that long."
        ) from None
    try:
        yield
    finally:
        turn.release()


@contextmanager
def _translated() -> Iterator[None]:
    import httpx
    from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except ResourceExhaustedResponse as exc:
        raise VectorIndexUnavailable(
            f"{where()} is rate limiting requests: {exc.message}.", retry_after=float(exc.retry_after_s)
        ) from exc
    except UnexpectedResponse as exc:
        status = exc.status_code or 0
        if status >= 500 or status == 429:
            raise VectorIndexUnavailable(f"{where()} failed (HTTP {status}).") from exc
        detail = exc.content[:300].decode("utf-8", "replace")
        hint = " Check QDRANT_API_KEY." if status in (401, 403) else ""
        raise IndexRefused(f"{where()} refused the request (HTTP {status}): {detail}.{hint}") from exc
    except (ResponseHandlingException, httpx.TransportError) as exc:
        source = getattr(exc, "source", exc)
        kind = (
            "did not answer in time" if isinstance(source, httpx.TimeoutException) else "could not be reached"
        )
        raise VectorIndexUnavailable(f"{where()} {kind}: {source}.") from exc
    except RuntimeError as exc:
        if "already accessed by another instance" not in str(exc):
            raise
        raise VectorIndexUnavailable(
            f"The local vector index ({where()}) is open in a process that does not take turns: {exc}"
        ) from exc


# --- writes ----------------------------------------------------------------------------------


def ensure_collection(client: Any, name: str, dimensions: int) -> None:
    from qdrant_client import models
    from qdrant_client.http.exceptions import UnexpectedResponse

    if client.collection_exists(name):
        return
    try:
        client.create_collection(
            name, vectors_config=models.VectorParams(size=dimensions, distance=models.Distance.COSINE)
        )
    except UnexpectedResponse:
        if client.collection_exists(name):
            return  # another process of the fleet made it a moment ago
        raise
    if settings.QDRANT_URL:  # local mode searches without them (and warns about each)
        for field, schema in PAYLOAD_INDEXES.items():
            client.create_payload_index(name, field, field_schema=schema)


def write(
    collection: str,
    dimensions: int,
    email_id: int,
    vectors: Sequence[Sequence[float]],
    payload: dict[str, Any],
) -> None:
    """The email's points: chunk ``n`` at ``point_id(email_id, n)``, then the points of
    chunks it no longer has (a reprocess that found less text) deleted."""
    from qdrant_client import models

    with session() as client:
        ensure_collection(client, collection, dimensions)
        for start in range(0, len(vectors), UPSERT_BATCH):
            numbers = range(start, min(start + UPSERT_BATCH, len(vectors)))
            client.upsert(
                collection,
                points=models.Batch(
                    ids=[point_id(email_id, n) for n in numbers],
                    vectors=[list(vectors[n]) for n in numbers],
                    payloads=[{**payload, "email_id": email_id, "chunk": n} for n in numbers],
                ),
                wait=True,
            )
        client.delete(
            collection,
            points_selector=models.FilterSelector(
                filter=models.Filter(
                    must=[
                        _is_email(email_id),
                        models.FieldCondition(key="chunk", range=models.Range(gte=len(vectors))),
                    ]
                )
            ),
            wait=True,
        )


def forget(email_id: int) -> int:
    """Delete the email's points from every collection of the index; returns how many
    collections were looked at."""
    from qdrant_client import models

    with session() as client:
        names = _collections(client)
        for name in names:
            client.delete(
                name,
                points_selector=models.FilterSelector(filter=models.Filter(must=[_is_email(email_id)])),
                wait=True,
            )
    return len(names)


# --- reads -----------------------------------------------------------------------------------


def nearest(collection: str, vector: Sequence[float], limit: int, filters: Filters = NO_FILTERS) -> list[Hit]:
    """The ``limit`` emails nearest to ``vector``, each by its nearest chunk, best first."""
    with session() as client:
        if not client.collection_exists(collection):
            return []
        return _nearest(client, collection, vector, limit, filters)


def _nearest(
    client: Any, collection: str, vector: Sequence[float], limit: int, filters: Filters
) -> list[Hit]:
    # Points best first: an email's first point is its nearest chunk, so the first ``limit``
    # emails met are the nearest emails. Fetched in growing pages until that many are met
    # (Qdrant's own group_by scans every point in local mode: seconds at 100,000).
    query_filter = _filter(filters)
    page = limit * 4
    while True:
        points = client.query_points(
            collection, query=list(vector), limit=page, query_filter=query_filter
        ).points
        best: dict[int, float] = {}
        for point in points:
            best.setdefault(int(point.payload["email_id"]), float(point.score))
        if len(best) >= limit or len(points) < page:
            return [Hit(email_id, score) for email_id, score in list(best.items())[:limit]]
        page *= 4


def nearest_to_email(
    collection: str, email_id: int, chunks: int, limit: int, filters: Filters = NO_FILTERS
) -> list[Hit] | None:
    """The ``limit`` emails nearest to the email's own chunks (their mean), in one turn;
    None when the email has no points in the collection."""
    with session() as client:
        if not client.collection_exists(collection):
            return None
        stored = client.retrieve(
            collection, ids=[point_id(email_id, n) for n in range(chunks)], with_vectors=True
        )
        vectors = [list(point.vector) for point in stored if point.vector is not None]
        if not vectors:
            return None
        return _nearest(client, collection, mean(vectors), limit, filters)


def mean(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The unit vector in the direction of the vectors' mean (the email as a whole)."""
    total = [sum(values) for values in zip(*vectors, strict=True)]
    norm = math.sqrt(sum(x * x for x in total)) or 1.0
    return [x / norm for x in total]


def points(collection: str) -> int | None:
    """How many points the collection holds (None when it does not exist yet)."""
    with session() as client:
        if not client.collection_exists(collection):
            return None
        return int(client.count(collection, exact=True).count)


def collections() -> list[str]:
    with session() as client:
        return _collections(client)


def _collections(client: Any) -> list[str]:
    prefix = f"{settings.QDRANT_COLLECTION_PREFIX}_"
    return sorted(c.name for c in client.get_collections().collections if c.name.startswith(prefix))


def _is_email(email_id: int) -> Any:
    from qdrant_client import models

    return models.FieldCondition(key="email_id", match=models.MatchValue(value=email_id))


def _filter(filters: Filters) -> Any:
    from qdrant_client import models

    must: list[Any] = []
    if filters.labels:
        must.append(models.FieldCondition(key="labels", match=models.MatchAny(any=list(filters.labels))))
    if filters.sender_domain:
        must.append(
            models.FieldCondition(
                key="sender_domain", match=models.MatchValue(value=filters.sender_domain.lower())
            )
        )
    if filters.received_after or filters.received_before:
        must.append(
            models.FieldCondition(
                key="received_at",
                range=models.DatetimeRange(gte=filters.received_after, lt=filters.received_before),
            )
        )
    must_not: list[Any] = []
    if filters.exclude_email_ids:
        must_not.append(
            models.FieldCondition(key="email_id", match=models.MatchAny(any=list(filters.exclude_email_ids)))
        )
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)
