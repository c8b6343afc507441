"""The email index with real ``manage.py runworker`` processes and Qdrant's local mode: one
worker's two children index emails while this process, standing for the admin, reads the
index (local mode admits one process at a time: each takes its turn); the catch-up, queued by
the sweep, completes partially indexed emails once the embedding service answers again."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from pipeline import intake, semantic
from pipeline.models import EmailMessage, Status, VectorRecord
from tests.pipeline import labelled_mail
from tests.support.model_server import ModelServer, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_local_mode__two_children_and_the_admin_take_turns_and_nothing_is_partial(start_worker):
    mails = labelled_mail.labelled_raw_mails()[:12]
    for _, data in mails:
        intake.receive(data)
    worker = start_worker("--burst", "--concurrency", "2")
    reads = 0
    while worker.process.poll() is None:  # reads while the children write
        semantic.by_meaning("parcel on its way", limit=3)
        reads += 1
    assert worker.wait() == 0, worker.log()
    assert reads > 0
    assert set(EmailMessage.objects.values_list("status", flat=True)) == {Status.LABELLED}
    assert VectorRecord.objects.count() == len(mails)
    assert "VectorIndexUnavailable" not in worker.log()
    assert semantic.by_meaning("parcel on its way", limit=1)[0].email.labels is not None


def test_catch_up__the_sweep_queues_it_and_a_worker_completes_what_was_partial(
    start_worker, model_server: ModelServer
):
    env = {
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_MODEL": "test-embedding",
        "EMBEDDING_BASE_URL": model_server.openai_url,
        "EMBEDDING_DIMENSIONS": "8",
        "EMBEDDING_TIMEOUT": "2",
    }
    model_server.responder = lambda received: Reply.error(503, "embedding service down")
    for _, data in labelled_mail.labelled_raw_mails()[:3]:
        intake.receive(data)
    worker = start_worker("--burst", "--queue", "mail:2", env=env)
    assert worker.wait(timeout=120) == 0, worker.log()
    assert set(EmailMessage.objects.values_list("status", flat=True)) == {Status.PARTIALLY_INDEXED}

    model_server.responder = lambda received: Reply.vectors(8)
    out = StringIO()
    call_command("sweep", stdout=out)
    assert "pipeline.tasks.catch_up_index: queued index.complete" in out.getvalue()
    worker = start_worker("--burst", "--queue", "index:1", env=env)
    assert worker.wait(timeout=120) == 0, worker.log()
    assert set(EmailMessage.objects.values_list("status", flat=True)) == {Status.LABELLED}
    assert VectorRecord.objects.filter(collection="emails_openai_test-embedding_8").count() == 3
