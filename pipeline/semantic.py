"""Search by meaning: an email's chunks embedded (``language_models.embeddings``) and kept as
points in Qdrant (``pipeline.vector_store``), the nearest emails to an email or a query, and
the index's state for the admin.

Every failure to reach the embedding service or Qdrant is a ``VectorIndexUnavailable``
(the pipeline marks the email partially indexed; a page says the index cannot be reached);
what another try cannot fix (a bad model name, an input refused) is ``IndexRefused``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.utils import parseaddr

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

import jobs
from language_models import ModelError, ModelRateLimited, ModelRejected, embeddings
from language_models.embeddings import EmbeddingModel
from pipeline import chunking, job_types, vector_store
from pipeline.errors import IndexRefused, VectorIndexUnavailable
from pipeline.models import EmailMessage, Status, VectorRecord
from pipeline.vector_store import Filters


@dataclass(frozen=True)
class Similar:
    email: EmailMessage
    score: float


def model() -> EmbeddingModel:
    return embeddings.current_model()


def collection() -> str:
    """The collection of the current embedding model: the only one searched."""
    return vector_store.collection_name(model())


def sender_domain(sender: str) -> str:
    address = parseaddr(sender)[1]
    return address.rpartition("@")[2].lower() if "@" in address else ""


def write_vectors(email: EmailMessage, text: str, labels: Sequence[str]) -> VectorRecord:
    """Embed the email's chunks and write them as points of the current collection; the
    record says so. VectorIndexUnavailable or IndexRefused when that fails."""
    current = model()
    pieces = chunking.chunks(text, settings.EMBEDDING_CHUNK_CHARS, settings.EMBEDDING_CHUNK_OVERLAP)
    vectors: list[list[float]] = _embedded(lambda: embeddings.embed_documents(pieces)) if pieces else []
    payload = {
        "labels": [label for label in labels if isinstance(label, str)],
        "sender_domain": sender_domain(email.sender),
        "received_at": email.received_at.isoformat(),
    }
    name = vector_store.collection_name(current)
    vector_store.write(name, current.dimensions, email.pk, vectors, payload)
    record, _ = VectorRecord.objects.update_or_create(
        email=email,
        defaults={
            "collection": name,
            "model": current.name[:200],
            "dimensions": current.dimensions,
            "chunks": len(vectors),
            "indexed_at": timezone.now(),
        },
    )
    return record


def _embedded[T](call: Callable[[], T]) -> T:
    try:
        return call()
    except ModelRateLimited as exc:
        raise VectorIndexUnavailable(f"The embedding service: {exc}", retry_after=exc.retry_after) from exc
    except ModelRejected as exc:
        raise IndexRefused(f"The embedding service refused the request: {exc}") from exc
    except ModelError as exc:
        raise VectorIndexUnavailable(f"The embedding service could not embed the email: {exc}") from exc


def similar(email: EmailMessage, limit: int | None = None) -> list[Similar] | None:
    """The emails nearest by meaning to ``email`` (a copy: to its origin), best first, its
    origin and every copy of it left out; None when it has no vectors in the current index."""
    root_id = email.origin_id or email.pk
    record = VectorRecord.objects.filter(email_id=root_id, collection=collection()).first()
    if record is None:
        return None
    own = [root_id, *EmailMessage.objects.filter(origin_id=root_id).values_list("pk", flat=True)]
    hits = vector_store.nearest_to_email(
        record.collection,
        root_id,
        record.chunks,
        limit or settings.SEARCH_MEANING_RESULTS,
        Filters(exclude_email_ids=tuple(own)),
    )
    return None if hits is None else _with_emails(hits)


def by_meaning(
    query: str, limit: int | None = None, filters: Filters = vector_store.NO_FILTERS
) -> list[Similar]:
    """The emails nearest by meaning to ``query``, best first."""
    text = " ".join(query.split())[: settings.EMBEDDING_CHUNK_CHARS]
    if not text:
        return []
    vector: list[float] = _embedded(lambda: embeddings.embed_query(text))
    return _with_emails(
        vector_store.nearest(collection(), vector, limit or settings.SEARCH_MEANING_RESULTS, filters)
    )


def _with_emails(hits: list[vector_store.Hit]) -> list[Similar]:
    emails = EmailMessage.objects.in_bulk([hit.email_id for hit in hits])
    # An email deleted since it was indexed (its points are on their way out) is left out.
    return [Similar(emails[hit.email_id], hit.score) for hit in hits if hit.email_id in emails]


# --- the index's state, for its admin page -----------------------------------------------------


@dataclass
class IndexState:
    model: EmbeddingModel
    where: str
    collection: str
    emails_indexed: int
    emails_under_other_models: int
    partially_indexed: QuerySet[EmailMessage]
    points: int | None = None
    unreachable: str = ""
    other_collections: list[str] = field(default_factory=list)
    rebuild: jobs.Job | None = None


def state() -> IndexState:
    name = collection()
    found = IndexState(
        model=model(),
        where=vector_store.where(),
        collection=name,
        emails_indexed=VectorRecord.objects.filter(collection=name).count(),
        emails_under_other_models=VectorRecord.objects.exclude(collection=name).count(),
        partially_indexed=EmailMessage.objects.filter(status=Status.PARTIALLY_INDEXED).order_by("-id"),
        rebuild=jobs.latest_job(job_types.REBUILD_INDEX),
    )
    try:
        found.points = vector_store.points(name)
        found.other_collections = [c for c in vector_store.collections() if c != name]
    except (VectorIndexUnavailable, IndexRefused) as exc:
        found.unreachable = str(exc)
    return found
