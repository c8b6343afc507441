"""Enqueue on real PostgreSQL: the caller's transaction, refusals, the registry's queue,
dedupe under concurrency, and the bulk form."""

from __future__ import annotations

import threading
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import store
from jobs.drivers import postgres
from jobs.errors import InvalidPayload, UnknownJobType
from jobs.models import Job, Priority, Status
from tests.jobs_app.tasks import ai_work, noop
from tests.support.concurrency import in_thread
from tests.support.database import lock_waiters, raw_connection
from tests.support.job_states import claim_one
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db


def _visible_elsewhere(conn: psycopg.Connection, job_id: int) -> bool:
    return conn.execute("SELECT count(*) FROM jobs_job WHERE id = %s", [job_id]).fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_enqueue__is_visible_to_others_only_after_the_callers_commit():
    observer = raw_connection()
    try:
        with transaction.atomic():
            job = store.enqueue("test.noop", {"n": 1})
            assert not _visible_elsewhere(observer, job.pk)
        assert _visible_elsewhere(observer, job.pk)
    finally:
        observer.close()


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_enqueue__rolled_back_with_the_callers_transaction():
    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        job = store.enqueue("test.noop", {"n": 1})
        raise Abort
    assert not Job.objects.filter(pk=job.pk).exists()


def test_enqueue__stores_the_registry_defaults():
    job = store.enqueue("test.fail", {"permanent": False})
    job.refresh_from_db()
    assert (job.type, job.queue, job.status, job.priority) == (
        "test.fail",
        "default",
        Status.QUEUED,
        Priority.NORMAL,
    )
    assert (job.attempts, job.max_attempts, job.payload) == (0, 3, {"permanent": False})


@pytest.mark.parametrize(
    "payload",
    [{"when": timezone.now()}, {"obj": object()}, {"x": float("nan")}, ["not", "a", "dict"], "text"],
    ids=["datetime", "object", "nan", "list", "str"],
)
def test_enqueue__refuses_a_payload_that_is_not_json(payload):
    with pytest.raises(InvalidPayload, match="payload"):
        store.enqueue("test.noop", payload)
    assert not Job.objects.exists()


def test_enqueue__refuses_an_unknown_type_by_name():
    with pytest.raises(UnknownJobType, match="'no.such'"):
        store.enqueue("no.such", {})
    assert not Job.objects.exists()


def test_enqueue__queue_always_comes_from_the_registry():
    job = store.enqueue("test.ai", {})
    assert job.queue == "ai"
    # There is no way to name another queue.
    with pytest.raises(TypeError):
        store.enqueue("test.ai", {}, queue="default")
    with pytest.raises(TypeError):
        ai_work.using(queue="default")


def test_enqueue__from_the_decorated_function_with_options():
    job = noop.using(priority="high").enqueue(n=3)
    job.refresh_from_db()
    assert (job.type, job.priority, job.payload) == ("test.noop", Priority.HIGH, {"n": 3})
    later = timezone.now() + timedelta(hours=1)
    delayed = noop.using(run_at=later, dedupe_key="k").enqueue()
    assert delayed.run_at == later and delayed.dedupe_key == "k"


def test_enqueue__refuses_an_unknown_priority():
    with pytest.raises(ValueError, match="Unknown priority 'urgent'"):
        store.enqueue("test.noop", {}, priority="urgent")


# --- dedupe ---------------------------------------------------------------------------------


def test_dedupe__second_enqueue_returns_the_existing_job():
    first = store.enqueue("test.noop", {"n": 1}, dedupe_key="email-7")
    second = store.enqueue("test.noop", {"n": 2}, dedupe_key="email-7")
    assert second.pk == first.pk
    assert Job.objects.count() == 1
    # The key is per type.
    other_type = store.enqueue("test.record", {}, dedupe_key="email-7")
    assert other_type.pk != first.pk


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_dedupe__concurrent_enqueues_with_one_key_give_one_job():
    """The second enqueue runs while the first one's transaction is still open: the
    partial unique index makes it wait, then it returns the first job."""
    inserted, release = threading.Event(), threading.Event()
    results: dict[str, int] = {}

    def first() -> None:
        with transaction.atomic():
            results["first"] = store.enqueue("test.noop", {"who": "first"}, dedupe_key="same").pk
            inserted.set()
            release.wait(10)

    def second() -> None:
        inserted.wait(10)
        with transaction.atomic():
            results["second"] = store.enqueue("test.noop", {"who": "second"}, dedupe_key="same").pk

    threads = [in_thread(first), in_thread(second)]
    wait_for(lambda: lock_waiters() >= 1, timeout=10, message="the second enqueue to wait on the first")
    release.set()
    for thread in threads:
        thread.join(10)
    assert results["first"] == results["second"]
    assert list(Job.objects.values_list("payload", flat=True)) == [{"who": "first"}]


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_dedupe__many_threads_racing_give_one_job():
    barrier = threading.Barrier(6)
    ids: list[int] = []

    def add() -> None:
        barrier.wait(10)
        ids.append(store.enqueue("test.noop", {}, dedupe_key="race").pk)

    for thread in [in_thread(add) for _ in range(6)]:
        thread.join(10)
    assert len(ids) == 6 and len(set(ids)) == 1
    assert Job.objects.count() == 1


@pytest.mark.parametrize("finish", ["complete", "fail", "cancel"])
def test_dedupe__key_is_free_again_once_the_job_finished(finish):
    first = store.enqueue("test.noop", {}, dedupe_key="k")
    if finish == "cancel":
        store.cancel(first)
    else:
        claimed = claim_one("w1")
        # While it runs, the key still dedupes.
        assert store.enqueue("test.noop", {}, dedupe_key="k").pk == first.pk
        if finish == "complete":
            assert store.complete("w1", [(claimed.id, claimed.attempt)]) == [first.pk]
        else:
            store.fail("w1", claimed.id, claimed.attempt, store.Failure("E", "bad", retryable=False))
    again = store.enqueue("test.noop", {}, dedupe_key="k")
    assert again.pk != first.pk
    assert Job.objects.filter(dedupe_key="k", status=Status.QUEUED).count() == 1


# --- bulk -----------------------------------------------------------------------------------


def test_enqueue_many__adds_thousands_in_a_few_statements():
    with CaptureQueriesContext(connection) as queries:
        added = store.enqueue_many("test.record", ({"n": n} for n in range(3000)), batch_size=1000)
    assert added == 3000
    assert len(queries) <= 3
    assert Job.objects.filter(type="test.record", status=Status.QUEUED, queue="default").count() == 3000
    assert Job.objects.filter(payload__n=2999).exists()


def test_enqueue_many__skips_dedupe_keys_already_active_or_repeated():
    existing = store.enqueue("test.noop", {"n": -1}, dedupe_key="k1")
    keys = ["k1", "k2", "k2", None, None, "k3"]
    added = store.enqueue_many("test.noop", [{"n": n} for n in range(len(keys))], dedupe_keys=keys)
    assert added == 4  # k1 is active already, the second k2 repeats the first
    assert Job.objects.count() == 5
    assert Job.objects.get(dedupe_key="k1").pk == existing.pk
    assert Job.objects.get(dedupe_key="k2").payload == {"n": 1}


def test_enqueue_many__refuses_bad_input_before_writing():
    with pytest.raises(InvalidPayload):
        store.enqueue_many("test.noop", [{"n": 1}, {"bad": object()}])
    with pytest.raises(UnknownJobType):
        store.enqueue_many("no.such", [{}])
    with pytest.raises(ValueError, match="one entry per payload"):
        store.enqueue_many("test.noop", [{}, {}], dedupe_keys=["a"])
    assert not Job.objects.exists()


def test_enqueue_many__with_priority_and_run_at():
    later = timezone.now() + timedelta(minutes=5)
    assert store.enqueue_many("test.ai", [{}, {}], priority="critical", run_at=later) == 2
    rows = list(Job.objects.values_list("queue", "priority", "run_at"))
    assert rows == [("ai", Priority.CRITICAL, later), ("ai", Priority.CRITICAL, later)]


# --- wake-up --------------------------------------------------------------------------------


def _received(listener: psycopg.Connection, timeout: float) -> list[str]:
    return [notice.payload for notice in listener.notifies(timeout=timeout, stop_after=1)]


@pytest.mark.postgres_only("LISTEN/NOTIFY: MariaDB has none, its workers poll")
@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_enqueue__notifies_the_queue_at_commit_and_never_after_a_rollback():
    listener = raw_connection()
    try:
        listener.execute(f"LISTEN {postgres.CHANNEL}")

        class Abort(Exception):
            pass

        with pytest.raises(Abort), transaction.atomic():
            store.enqueue("test.noop", {})
            raise Abort
        with transaction.atomic():
            store.enqueue("test.ai", {})
            assert _received(listener, timeout=0) == []  # not before the commit
        # The rolled-back default-queue job sent nothing: the first notice is the ai one.
        assert _received(listener, timeout=5) == ["plain:ai"]

        store.enqueue_many("test.noop", [{} for _ in range(50)])
        assert _received(listener, timeout=5) == ["plain:default"]
        store.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=1))  # not due: no wake-up
        store.enqueue("test.ai", {})
        assert _received(listener, timeout=5) == ["plain:ai"]
        # Jobs with limit keys alone (their type's concurrency): ``keyed:``, so the workers
        # try the claim of keyed jobs alone; with plain jobs beside them, the queue's bare
        # name: both claims.
        store.enqueue("test.flow_type", {})
        assert _received(listener, timeout=5) == ["keyed:default"]
        store.enqueue_many("test.flow_type", [{}, {}])
        assert _received(listener, timeout=5) == ["keyed:default"]
        # One statement, one job with its key and one without (a payload without the key's
        # field is not limited by it).
        store.enqueue_many("test.flow_key", [{"account": 1}, {}])
        assert _received(listener, timeout=5) == ["default"]
    finally:
        listener.close()
