"""The email index's vector half in the pipeline, in-process on the database with Qdrant's
local mode in the test's folder: what is written (chunks, ids, payloads), the seed's error
class (Qdrant or the embedding service unreachable → partially indexed) against a closed
port, a 503, a silent and a dripping server, a refusal for good, the catch-up, a change of
model, deletion, and filters."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import portalocker
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

import jobs
from jobs import PermanentError, testing
from pipeline import indexing, intake, job_types, process, semantic, tasks, vector_store
from pipeline.models import (
    Attachment,
    EmailMessage,
    ErrorLogEntry,
    IndexRecord,
    RunOutcome,
    Status,
    VectorRecord,
)
from pipeline.vector_store import Filters
from tests.pipeline import corpus, labelled_mail
from tests.support.model_server import ModelServer, Reply
from tests.support.servers import DrippingServer, SilentServer, closed_port_url

pytestmark = pytest.mark.django_db


def _email(raw: bytes | None = None) -> EmailMessage:
    return intake.receive(raw or corpus.plain()).email


def _points(email_id: int) -> list[dict]:
    from qdrant_client import models

    with vector_store.session() as client:
        found, _ = client.scroll(
            semantic.collection(),
            scroll_filter=models.Filter(
                must=[models.FieldCondition(key="email_id", match=models.MatchValue(value=email_id))]
            ),
            limit=1000,
        )
    return sorted(({"id": str(point.id), **point.payload} for point in found), key=lambda p: p["chunk"])


def _long_email(paragraphs: int) -> bytes:
    from email.message import EmailMessage as Mime
    from email.policy import SMTP

    message = Mime()
    message["From"] = "Ops <ops@Example.COM>"
    message["Subject"] = "Long report"
    message["Message-ID"] = f"<long-{paragraphs}@example.com>"
    message.set_content(
        "\n\n".join(f"Paragraph {n}: the quarterly numbers, once more." * 8 for n in range(paragraphs))
    )
    return message.as_bytes(policy=SMTP)


def test_processing__writes_one_point_per_chunk_with_ids_from_email_and_chunk(settings):
    settings.EMBEDDING_CHUNK_CHARS, settings.EMBEDDING_CHUNK_OVERLAP = 400, 50
    email = _email(_long_email(12))
    assert process.process_email(email.pk) == "labelled"
    record = VectorRecord.objects.get(email=email)
    assert record.collection == semantic.collection() == "emails_local_wordllama-l2-supercat_256"
    assert (record.model, record.dimensions) == ("wordllama-l2-supercat", 256) and record.chunks > 3
    points = _points(email.pk)
    assert [p["chunk"] for p in points] == list(range(record.chunks))
    assert [p["id"] for p in points] == [vector_store.point_id(email.pk, n) for n in range(record.chunks)]
    email.refresh_from_db()
    assert points[0]["labels"] == email.labels and points[0]["sender_domain"] == "example.com"
    assert points[0]["received_at"] == email.received_at.isoformat()

    # A reprocess writes the same points again, never more.
    assert process.process_email(email.pk) == "labelled"
    assert [p["id"] for p in _points(email.pk)] == [p["id"] for p in points]


def test_processing__a_reprocess_with_less_text_deletes_the_chunks_it_no_longer_has(settings):
    settings.EMBEDDING_CHUNK_CHARS, settings.EMBEDDING_CHUNK_OVERLAP = 400, 50
    email = _email(_long_email(12))
    process.process_email(email.pk)
    before = VectorRecord.objects.get(email=email).chunks
    semantic.write_vectors(email, "Long report\nnow short", ["report"])
    assert [p["chunk"] for p in _points(email.pk)] == [0] and before > 1
    assert VectorRecord.objects.get(email=email).chunks == 1


def test_processing__a_copy_is_not_embedded_and_similar_emails_leave_out_its_origins_copies():
    original = _email(corpus.plain())
    copy = _email(corpus.duplicate_of_plain())
    other = _email(corpus.multipart_with_attachments())
    for email in (original, copy, other):
        process.process_email(email.pk)
    copy.refresh_from_db()
    assert copy.status == Status.DUPLICATE and not VectorRecord.objects.filter(email=copy).exists()
    assert len(_points(copy.pk)) == 0
    for page in (original, copy):  # a copy's page shows its origin's neighbours
        found = semantic.similar(page)
        assert [hit.email.pk for hit in found] == [other.pk]
        assert 0 < found[0].score <= 1


# --- the seed's error class ------------------------------------------------------------------


@pytest.fixture
def unreachable(request, settings, model_server: ModelServer) -> Iterator[str]:
    """The embedding service or Qdrant, unreachable in one of the ways it can be."""
    part, how = request.param
    settings.EMBEDDING_TIMEOUT = settings.QDRANT_TIMEOUT = 0.5
    server = {"silent": SilentServer, "drip": DrippingServer}.get(how, lambda: None)()
    if how == "503":
        model_server.responder = lambda received: Reply.error(503, "overloaded")
    url = {"closed port": closed_port_url(), "503": model_server.url}.get(how) or server.url
    if part == "embeddings":
        settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "test-embedding"
        settings.EMBEDDING_BASE_URL, settings.EMBEDDING_DIMENSIONS = f"{url}/v1", 8
    else:
        settings.QDRANT_URL = url
    yield part
    if server is not None:
        server.close()


CASES = [(part, how) for part in ("embeddings", "qdrant") for how in ("closed port", "503", "silent", "drip")]


@pytest.mark.parametrize("unreachable", CASES, indirect=True, ids=[f"{p}-{h}" for p, h in CASES])
def test_unreachable__the_email_is_partially_indexed_and_the_job_succeeds(unreachable: str):
    email = _email(corpus.multipart_with_attachments())
    assert process.process_email(email.pk, job_id=41) == "partially_indexed"
    email.refresh_from_db()
    assert email.status == Status.PARTIALLY_INDEXED and email.labels == ["meeting"]
    assert IndexRecord.objects.filter(email=email).exists()  # the full text is written
    assert not VectorRecord.objects.filter(email=email).exists()
    run = email.runs.get()
    assert (run.outcome, run.index_missing) == (RunOutcome.PARTIALLY_INDEXED, "vectors") and run.closed_at
    error = ErrorLogEntry.objects.get(email=email)
    assert (error.error_class, error.job_id) == ("pipeline.errors.VectorIndexUnavailable", 41)
    assert ("embedding service" if unreachable == "embeddings" else "Qdrant server") in error.text
    assert error.text in run.last_error


def test_local_mode_busy__past_its_wait_the_email_is_partially_indexed(settings):
    settings.QDRANT_LOCAL_WAIT = 0.2
    settings.QDRANT_PATH.mkdir(parents=True, exist_ok=True)
    email = _email()
    turn = settings.QDRANT_PATH.with_name(settings.QDRANT_PATH.name + ".turn")
    with portalocker.Lock(
        turn, mode="a", flags=portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
    ):
        assert process.process_email(email.pk) == "partially_indexed"
    assert "was busy for 0.2s: local mode admits one process at a time" in ErrorLogEntry.objects.get().text


def test_refused__a_4xx_of_the_embedding_service_fails_the_email_for_good(
    settings, model_server: ModelServer
):
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "no-such-model"
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_DIMENSIONS = model_server.openai_url, 8
    model_server.responder = lambda received: Reply.error(404, "The model `no-such-model` does not exist")
    email = _email()
    with pytest.raises(PermanentError, match="Check EMBEDDING_MODEL \\(no-such-model\\)"):
        process.process_email(email.pk)
    email.refresh_from_db()
    assert (email.status, email.needs_review) == (Status.FAILED, True)
    assert email.runs.get().outcome == RunOutcome.FAILED
    assert ErrorLogEntry.objects.get().error_class == "pipeline.errors.IndexRefused"
    assert len(model_server.received) == 1  # no retry loop


# --- the catch-up ----------------------------------------------------------------------------


@pytest.fixture
def embedding_server(settings, model_server: ModelServer) -> ModelServer:
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "test-embedding"
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_DIMENSIONS = model_server.openai_url, 8
    settings.EMBEDDING_TIMEOUT = 2
    return model_server


def test_catch_up__completes_partially_indexed_emails_once_the_service_answers(embedding_server, settings):
    embedding_server.responder = lambda received: Reply.error(503, "down")
    emails = [_email(corpus.plain(f"Invoice {n}", f"<n-{n}@example.com>")) for n in range(3)]
    for email in emails:
        assert process.process_email(email.pk) == "partially_indexed"

    # Still down: the run stops at the first email and says why; nothing is lost.
    result = indexing.complete_partially_indexed(limit=10)
    assert (result.completed, result.still_partial) == (0, 1) and "HTTP 503" in result.stopped
    assert EmailMessage.objects.filter(status=Status.PARTIALLY_INDEXED).count() == 3

    embedding_server.responder = lambda received: Reply.vectors(8)
    result = indexing.complete_partially_indexed(limit=2)  # bounded: INDEX_CATCH_UP_BATCH
    assert result.completed == 2
    assert sorted(EmailMessage.objects.values_list("status", flat=True)) == [
        Status.LABELLED,
        Status.LABELLED,
        Status.PARTIALLY_INDEXED,
    ]
    assert indexing.complete_partially_indexed().completed == 1
    assert VectorRecord.objects.count() == 3 and all(len(_points(e.pk)) == 1 for e in emails)


def test_catch_up__the_sweep_queues_it_while_emails_are_partially_indexed(embedding_server):
    assert tasks.catch_up_index() == "nothing to catch up"
    embedding_server.responder = lambda received: Reply.error(503, "down")
    process.process_email(_email().pk)
    assert tasks.catch_up_index() == "queued index.complete"
    assert tasks.catch_up_index() == "queued index.complete"  # deduplicated: still one job
    assert jobs.jobs_for("index.complete").count() == 1
    assert jobs.active_job("index.complete").queue == "index"


def test_catch_up__a_rate_limit_waits_for_the_service(embedding_server):
    embedding_server.responder = lambda received: Reply.error(503, "down")
    process.process_email(_email().pk)
    embedding_server.responder = lambda received: Reply.error(429, "slow down", retry_after="40")
    result = indexing.complete_partially_indexed()
    assert result.retry_after == 40.0 and result.completed == 0


# --- a change of model, deletion, filters ------------------------------------------------------


def test_model_change__is_a_new_collection_filled_by_the_rebuild_never_mixed_vectors(settings):
    email = _email()
    process.process_email(email.pk)
    old = semantic.collection()
    settings.EMBEDDING_DIMENSIONS = 128
    new = semantic.collection()
    assert new == "emails_local_wordllama-l2-supercat_128" != old
    assert semantic.similar(email) is None  # its vectors are not in the current collection
    assert (
        indexing.rebuild_due()
        and tasks.catch_up_index() == "queued index.rebuild (the embedding model changed)"
    )

    steps: list[str] = []
    since = timezone.now()
    assert indexing.rebuild(since, lambda percent, message: steps.append(message)) == 1
    assert steps == ["0 of 1 emails", "1 of 1 emails"]
    assert VectorRecord.objects.get(email=email).collection == new and not indexing.rebuild_due()
    assert vector_store.points(new) == 1 and vector_store.points(old) == 1  # the old one is left as it was
    assert indexing.rebuild(since, lambda *args: None) == 0  # done: a retry goes on where it stopped
    assert indexing.rebuild(timezone.now(), lambda *args: None) == 1  # Re-index all: every email again


def test_deletion__an_email_deleted_in_the_admin_or_through_the_model_loses_its_points_once_its_job_ran(
    client,
):
    """However an email is deleted (its Delete page, the list's "Delete selected", by an
    operator allowed to delete emails; the model's ``delete`` on a row or a queryset;
    nothing cascades to emails), the deletion queues ``index.forget`` on the index queue,
    and that job, run by the engine, deletes the email's points from Qdrant; the other
    emails' points stay. Its attachments and index record go with it."""
    kept = _email(corpus.plain())
    by_page = _email(corpus.multipart_with_attachments())
    by_action, by_row, by_queryset = (
        _email(labelled_mail.raw(mail, number)) for number, mail in enumerate(labelled_mail.MAILS[:3])
    )
    deleted = [by_page, by_action, by_row, by_queryset]
    for email in (kept, *deleted):
        process.process_email(email.pk)
    kept_points = _points(kept.pk)
    assert kept_points and all(_points(email.pk) for email in deleted)
    assert by_page.attachments.exists()
    operator = get_user_model().objects.create_user("ops", "ops@example.com", "pw-for-tests", is_staff=True)
    operator.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="pipeline", codename__in=["view_emailmessage", "delete_emailmessage"]
        )
    )
    client.force_login(operator)

    page = client.post(reverse("admin:pipeline_emailmessage_delete", args=[by_page.pk]), {"post": "yes"})
    action = client.post(
        reverse("admin:pipeline_emailmessage_changelist"),
        {"action": "delete_selected", "_selected_action": [by_action.pk], "post": "yes"},
    )
    EmailMessage.objects.get(pk=by_row.pk).delete()
    EmailMessage.objects.filter(pk=by_queryset.pk).delete()

    assert (page.status_code, action.status_code) == (302, 302)
    assert list(EmailMessage.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not Attachment.objects.filter(email_id=by_page.pk).exists()
    assert list(VectorRecord.objects.values_list("email_id", flat=True)) == [kept.pk]
    queued = testing.assert_enqueued(job_types.FORGET_EMAIL, queue=tasks.INDEX_QUEUE, count=4)
    assert sorted(job.payload["email_id"] for job in queued) == sorted(email.pk for email in deleted)
    assert all(_points(email.pk) for email in deleted)  # until the job runs

    drained = testing.drain(tasks.INDEX_QUEUE)

    assert (len(drained.succeeded), drained.ran) == (4, 4)
    assert [_points(email.pk) for email in deleted] == [[], [], [], []]
    assert _points(kept.pk) == kept_points


def test_filters__a_search_narrows_to_labels_sender_domains_and_dates():
    invoice = _email(corpus.plain())
    meeting = _email(corpus.multipart_with_attachments())
    for email in (invoice, meeting):
        process.process_email(email.pk)
    query = "quarterly report"

    def found(**filters) -> list[int]:
        return [hit.email.pk for hit in semantic.by_meaning(query, filters=Filters(**filters))]

    assert sorted(found()) == sorted([invoice.pk, meeting.pk])
    assert found(labels=("invoice",)) == [invoice.pk]
    assert found(sender_domain="EXAMPLE.com", exclude_email_ids=(invoice.pk,)) == [meeting.pk]
    assert found(sender_domain="example.org") == []
    now = timezone.now()
    assert sorted(found(received_after=now - timedelta(hours=1))) == sorted([invoice.pk, meeting.pk])
    assert found(received_before=now - timedelta(hours=1)) == []
