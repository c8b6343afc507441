"""The email index: how good the embedded model's neighbours are, how fast emails are
embedded and indexed, and how long a search takes at 100,000 chunks, each beside the
full-text index alone.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_index_bench .venv/bin/python -m bench.index
    .venv/bin/python -m bench.index --only quality|throughput|search [--emails N] [--chunks N]

Uses the database in DATABASE_URL (default ``jp_index_bench`` on the local PostgreSQL,
created if missing; its tables are flushed: use a database of your own) and Qdrant's local
mode in a temporary folder (the embedded default: no Qdrant server is measured here).

- **quality**: the labelled set of the quality test (``tests/pipeline/labelled_mail.py``)
  through the real pipeline, with the embedded model, with vectors of noise and with a
  bag-of-words hash: the share of emails whose nearest neighbour shares their label, and
  the queries (sharing no word with their targets) found in the top 3.
- **throughput**: --emails generated emails (``bench.lib.emails``) processed once without
  the index, then their index written again part by part in this process: the full text
  alone, the embedding alone, and the vectors with their write to local Qdrant (one turn at
  the folder per email, as the pipeline takes it): emails and chunks per second.
- **search**: --chunks chunks (4 per email) embedded and written to local Qdrant in bulk,
  their emails' text in the full-text index; then --queries searches of each kind, p50/p95:
  the full-text search alone; by meaning with the client kept open (what one process, or a
  server, pays: the query's embedding, the nearest points, the emails read); and by meaning
  as the pipeline's local mode takes it (a turn: opening the folder reads every point).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from bench.lib import project
from bench.lib.stats import percentile

QUERIES = ["parcel on its way", "money we owe", "get-together", "quarterly budget review", "tracking update"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["quality", "throughput", "search"])
    parser.add_argument("--emails", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--database", help="postgres://… or mysql://…; its tables are flushed")
    args = parser.parse_args()
    # Qdrant warns at every opening of a local collection past 20,000 points: known here.
    warnings.filterwarnings("ignore", message="Local mode is not recommended")
    folder = Path(tempfile.mkdtemp(prefix="index-bench-"))
    os.environ.update({"VAR_DIR": str(folder), "MODEL_PROVIDER": "local", "EMBEDDING_PROVIDER": "local"})
    os.environ["QDRANT_PATH"] = str(folder / "qdrant")
    project.open_database(args.database, "jp_index_bench")
    from django.db import connection

    print(
        f"{connection.vendor} {connection.cursor().connection.info.server_version if connection.vendor == 'postgresql' else ''}; "
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}"
    )
    try:
        for part, run in (("quality", quality), ("throughput", throughput), ("search", search)):
            if args.only in (None, part):
                run(args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fresh() -> None:
    """Empty tables and an empty local index."""
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    shutil.rmtree(settings.QDRANT_PATH, ignore_errors=True)


def quality(args: argparse.Namespace) -> None:
    from language_models import embeddings
    from tests.pipeline import labelled_mail

    print("\nQuality on the labelled set (tests/pipeline/labelled_mail.py), through the pipeline:")
    dimensions = embeddings.current_model().dimensions
    real = embeddings.embed_documents, embeddings.embed_query
    for name, fake in (
        ("embedded model (WordLlama l2_supercat)", None),
        ("vectors of noise", labelled_mail.random_vectors(dimensions)),
        ("bag-of-words hash", labelled_mail.word_hash_vectors(dimensions)),
    ):
        _fresh()
        if fake is not None:
            embeddings.embed_documents = fake  # type: ignore[assignment]
            embeddings.embed_query = lambda text, fake=fake: fake([text])[0]  # type: ignore[assignment]
        try:
            print(f"  {name:<40} {labelled_mail.evaluate()}")
        finally:
            embeddings.embed_documents, embeddings.embed_query = real


def throughput(args: argparse.Namespace) -> None:
    from django.test import override_settings

    from bench.lib import emails
    from language_models import embeddings
    from pipeline import chunking, indexing, intake, process
    from pipeline.models import EmailMessage

    _fresh()
    print(f"\nIndexing {args.emails:,} generated emails in one process (emails/s, chunks/s):")
    with override_settings(SEARCH_INDEX=False, VECTOR_INDEX=False):
        for raw in emails.generate(args.emails):
            received = intake.receive(raw)
            if received.created:
                process.process_email(received.email.pk)
    work = [
        (email, indexing.stored_text(email), list(email.labels))
        for email in EmailMessage.objects.exclude(status="duplicate").order_by("id")
    ]
    chunks = sum(len(chunking.chunks(indexing.meaning_text(e, t), *_chunking())) for e, t, _ in work)
    print(f"  {len(work):,} emails (copies left out), {chunks:,} chunks")

    def rate(label: str, step: Callable[[object, str, list[str]], None]) -> None:
        started = time.perf_counter()
        for email, text, labels in work:
            step(email, text, labels)
        seconds = time.perf_counter() - started
        print(f"  {label:<52} {len(work) / seconds:>8,.0f} emails/s {chunks / seconds:>9,.0f} chunks/s")

    rate("full-text index alone", lambda e, t, labels: indexing.index_email(e, t, labels, vectors=False))
    rate(
        "embedding alone (WordLlama, no write)",
        lambda e, t, labels: embeddings.embed_documents(
            chunking.chunks(indexing.meaning_text(e, t), *_chunking())
        ),
    )
    rate(
        "vectors: embedding + local Qdrant, a turn per email",
        lambda e, t, labels: indexing.index_email(e, t, labels, full_text=False),
    )
    rate("both, as the pipeline writes them", lambda e, t, labels: indexing.index_email(e, t, labels))


def _chunking() -> tuple[int, int]:
    from django.conf import settings

    return settings.EMBEDDING_CHUNK_CHARS, settings.EMBEDDING_CHUNK_OVERLAP


def search(args: argparse.Namespace) -> None:
    from django.db import connection
    from qdrant_client import models

    from bench.lib.emails import WORDS
    from language_models import embeddings
    from pipeline import search as full_text
    from pipeline import semantic, vector_store
    from pipeline.models import EmailMessage, IndexRecord, VectorRecord

    _fresh()
    per_email = 4
    count = args.chunks // per_email
    rng = random.Random(11)
    texts = [[" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(per_email)] for _ in range(count)]
    print(
        f"\nSearch at {count * per_email:,} chunks ({count:,} emails of {per_email} chunks), {args.queries} queries each:"
    )
    started = time.perf_counter()
    EmailMessage.objects.bulk_create(
        [
            EmailMessage(
                blob_name=f"b/{n}", size=1, sha256=f"{n:064d}", subject=f"Bench {n}", status="labelled"
            )
            for n in range(count)
        ],
        batch_size=5000,
    )
    ids = list(EmailMessage.objects.order_by("id").values_list("id", flat=True))
    IndexRecord.objects.bulk_create(
        [IndexRecord(email_id=i, text="\n".join(t)) for i, t in zip(ids, texts, strict=True)], batch_size=5000
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("UPDATE pipeline_indexrecord SET vector = to_tsvector('simple', text)")
            cursor.execute("ANALYZE pipeline_indexrecord")
    print(f"  full-text index of {count:,} emails written in {time.perf_counter() - started:.0f}s")

    started = time.perf_counter()
    name = semantic.collection()
    model = semantic.model()
    from django.utils import timezone

    with vector_store.session() as client:
        vector_store.ensure_collection(client, name, model.dimensions)
        # Set-up only: local mode commits (and syncs) each point on its own; 100,000 syncs on
        # a shared disk take longer than the rest of the benchmark.
        client._client.collections[name].storage.storage.execute("PRAGMA synchronous = OFF")
        for start in range(0, count, 250):
            batch = list(range(start, min(start + 250, count)))
            flat = [text for n in batch for text in texts[n]]
            vectors = embeddings.embed_documents(flat)
            client.upsert(
                name,
                points=models.Batch(
                    ids=[vector_store.point_id(ids[n], c) for n in batch for c in range(per_email)],
                    vectors=vectors,
                    payloads=[
                        {"email_id": ids[n], "chunk": c, "labels": []}
                        for n in batch
                        for c in range(per_email)
                    ],
                ),
                wait=True,
            )
    VectorRecord.objects.bulk_create(
        [
            VectorRecord(
                email_id=i,
                collection=name,
                model=model.name,
                dimensions=model.dimensions,
                chunks=per_email,
                indexed_at=timezone.now(),
            )
            for i in ids
        ],
        batch_size=5000,
    )
    print(
        f"  {count * per_email:,} chunks embedded and written to local Qdrant in {time.perf_counter() - started:.0f}s"
    )

    queries = [QUERIES[n % len(QUERIES)] for n in range(args.queries)]

    def timed(label: str, call: Callable[[str], object], runs: list[str]) -> None:
        call(runs[0])  # warm-up
        took = []
        for query in runs:
            started = time.perf_counter()
            call(query)
            took.append((time.perf_counter() - started) * 1000)
        print(
            f"  {label:<58} p50 {percentile(took, 0.5):>9,.1f} ms  p95 {percentile(took, 0.95):>9,.1f} ms  (n={len(took)})"
        )

    timed("full-text search alone (first 20 emails)", lambda q: list(full_text.search(q)[:20]), queries)
    with vector_store.session() as client:

        def held_open(query: str) -> object:
            vector = embeddings.embed_query(query)
            hits = vector_store._nearest(client, name, vector, 20, vector_store.NO_FILTERS)
            return EmailMessage.objects.in_bulk([hit.email_id for hit in hits])

        timed("by meaning, client kept open (one process, or a server)", held_open, queries)
    timed(
        "by meaning, local mode's turn (opens the folder each time)",
        lambda q: semantic.by_meaning(q),
        queries[:5],
    )


if __name__ == "__main__":
    main()
