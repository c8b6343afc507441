"""The engine's public API on real PostgreSQL: keys derived from the payload, the jobs of a
key (active, latest, all), "has an active job" inside a domain queryset, cancel-if-queued,
and twin enqueues racing.

``test.keyed`` declares ``dedupe="thing:{thing_id}"``; the "domain" rows are Django's users.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import OuterRef

import jobs
from jobs import store
from jobs.models import Job, Status
from tests.jobs_app.tasks import keyed
from tests.support.concurrency import in_thread
from tests.support.database import lock_waiters, on_mariadb, raw_connection
from tests.support.job_states import claim_one
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db

KEYED = "test.keyed"


def _finish(job: Job, status: str = Status.SUCCEEDED) -> None:
    Job.objects.filter(pk=job.pk).update(status=status)


# --- keys come from the payload ---------------------------------------------------------------


def test_enqueue__derives_the_key_from_the_payload_with_its_types_prefix():
    job = jobs.enqueue(KEYED, {"thing_id": 7, "note": "first"})
    assert job.dedupe_key == "thing:7"
    assert jobs.enqueue(KEYED, {"thing_id": "abc"}).dedupe_key == "thing:abc"
    assert keyed.enqueue(thing_id=8).dedupe_key == "thing:8"  # the decorated function too


def test_enqueue__a_second_enqueue_of_the_same_payload_returns_the_same_job():
    first = jobs.enqueue(KEYED, {"thing_id": 7, "note": "first"})
    again = jobs.enqueue(KEYED, {"thing_id": 7, "note": "second"})
    assert again.pk == first.pk
    assert list(Job.objects.values_list("payload", flat=True)) == [{"thing_id": 7, "note": "first"}]
    assert jobs.enqueue(KEYED, {"thing_id": 8}).pk != first.pk


def test_enqueue__a_payload_without_the_key_field_is_not_deduplicated():
    assert jobs.enqueue(KEYED, {"thing_id": None}).dedupe_key is None
    assert jobs.enqueue(KEYED, {}).pk != jobs.enqueue(KEYED, {}).pk


@pytest.mark.parametrize("value", [True, 1.5, [1]], ids=["bool", "float", "list"])
def test_enqueue__refuses_a_key_field_that_would_not_read_the_same_in_sql(value):
    with pytest.raises(jobs.InvalidPayload, match="'thing_id' must be an integer or a string"):
        jobs.enqueue(KEYED, {"thing_id": value})
    assert not Job.objects.exists()


def test_enqueue__refuses_a_callers_key_for_a_type_that_owns_its_key():
    with pytest.raises(ValueError, match="derives its dedupe key from the payload"):
        jobs.enqueue(KEYED, {"thing_id": 7}, dedupe_key="7")
    with pytest.raises(ValueError, match="derives its dedupe keys from the payloads"):
        jobs.enqueue_many(KEYED, [{"thing_id": 7}], dedupe_keys=["7"])
    with pytest.raises(ValueError, match="derives its dedupe key"):
        keyed.using(dedupe_key="7").enqueue(thing_id=7)
    assert not Job.objects.exists()


def test_enqueue__a_type_without_a_declared_key_still_takes_the_callers():
    first = jobs.enqueue("test.noop", {}, dedupe_key="k")
    assert jobs.enqueue("test.noop", {}, dedupe_key="k").pk == first.pk


def test_enqueue_many__derives_keys_and_skips_active_and_repeated_ones():
    existing = jobs.enqueue(KEYED, {"thing_id": 1})
    added = jobs.enqueue_many(KEYED, [{"thing_id": n} for n in (1, 2, 2, 3)])
    assert added == 2  # thing 1 is active already, the second thing 2 repeats the first
    keys = sorted(Job.objects.values_list("dedupe_key", flat=True))
    assert keys == ["thing:1", "thing:2", "thing:3"]
    assert Job.objects.get(dedupe_key="thing:1").pk == existing.pk


# --- the jobs of a key ------------------------------------------------------------------------


def test_active_job__finds_the_queued_or_running_job_of_a_key_only():
    assert jobs.active_job(KEYED, thing_id=7) is None
    job = jobs.enqueue(KEYED, {"thing_id": 7})
    jobs.enqueue(KEYED, {"thing_id": 8})
    assert jobs.active_job(KEYED, thing_id=7) == job
    claim_one("w1", KEYED)
    found = jobs.active_job(KEYED, thing_id=7)
    assert found == job and found.status == Status.RUNNING
    _finish(job)
    assert jobs.active_job(KEYED, thing_id=7) is None


def test_latest_job__is_the_newest_job_of_a_key_whatever_its_status():
    assert jobs.latest_job(KEYED, thing_id=7) is None
    old = jobs.enqueue(KEYED, {"thing_id": 7})
    _finish(old, Status.FAILED)
    assert jobs.latest_job(KEYED, thing_id=7) == old
    new = jobs.enqueue(KEYED, {"thing_id": 7})
    jobs.enqueue(KEYED, {"thing_id": 8})
    assert new.pk != old.pk
    assert jobs.latest_job(KEYED, thing_id=7) == new
    assert list(jobs.jobs_for(KEYED, thing_id=7)) == [new, old]  # newest first


def test_lookups__name_the_keys_fields_and_need_a_type_that_declares_a_key():
    with pytest.raises(TypeError, match="test.keyed jobs are keyed by thing_id; got other_id"):
        jobs.active_job(KEYED, other_id=7)
    with pytest.raises(TypeError, match="keyed by thing_id; got none"):
        jobs.has_active_job(KEYED)
    with pytest.raises(ValueError, match="'test.noop' declares no dedupe key"):
        jobs.latest_job("test.noop", n=1)
    with pytest.raises(jobs.UnknownJobType):
        jobs.active_job("no.such", thing_id=1)


# --- "has an active job" in a domain queryset ----------------------------------------------


def test_has_active_job__filters_a_domain_queryset_by_its_rows_active_jobs():
    users = get_user_model().objects
    queued, running, finished, never = (users.create(username=name) for name in "qrfn")
    jobs.enqueue(KEYED, {"thing_id": running.pk})
    claim_one("w1", KEYED)
    jobs.enqueue(KEYED, {"thing_id": queued.pk})
    _finish(jobs.enqueue(KEYED, {"thing_id": finished.pk}))
    jobs.enqueue("test.noop", {}, dedupe_key=f"thing:{never.pk}")  # another type's key

    busy = users.filter(jobs.has_active_job(KEYED, thing_id=OuterRef("pk")))
    idle = users.exclude(jobs.has_active_job(KEYED, thing_id=OuterRef("pk")))
    assert set(busy) == {queued, running}
    assert set(idle) == {finished, never}


def test_has_active_job__works_with_a_text_column_and_with_a_plain_value():
    users = get_user_model().objects
    ada = users.create(username="ada")
    users.create(username="bob")
    jobs.enqueue(KEYED, {"thing_id": "ada"})
    assert list(users.filter(jobs.has_active_job(KEYED, thing_id=OuterRef("username")))) == [ada]
    # A plain value asks about one key, the same for every row.
    assert users.filter(jobs.has_active_job(KEYED, thing_id="ada")).count() == 2
    assert not users.filter(jobs.has_active_job(KEYED, thing_id="bob")).exists()


# --- cancel if queued ---------------------------------------------------------------------------


def test_cancel_if_queued__cancels_a_queued_job_and_frees_its_key():
    job = jobs.enqueue(KEYED, {"thing_id": 7})
    cancelled = jobs.cancel_if_queued(KEYED, thing_id=7)
    assert cancelled is not None and cancelled.pk == job.pk
    job.refresh_from_db()
    assert (job.status, job.message) == (Status.CANCELLED, store.CANCELLED)
    assert jobs.active_job(KEYED, thing_id=7) is None
    assert jobs.cancel_if_queued(KEYED, thing_id=7) is None  # nothing left to cancel


def test_cancel_if_queued__leaves_a_running_job_alone():
    job = jobs.enqueue(KEYED, {"thing_id": 7})
    claim_one("w1", KEYED)
    assert jobs.cancel_if_queued(KEYED, thing_id=7) is None
    job.refresh_from_db()
    assert job.status == Status.RUNNING


def test_cancel_if_queued__with_no_job_is_a_no_op():
    other = jobs.enqueue(KEYED, {"thing_id": 8})
    assert jobs.cancel_if_queued(KEYED, thing_id=7) is None
    other.refresh_from_db()
    assert other.status == Status.QUEUED


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_cancel_if_queued__loses_to_a_claim_that_locked_the_row_first():
    """A worker claiming the job at the same moment: cancel waits for its row lock, then
    finds the job running and leaves it."""
    job = jobs.enqueue(KEYED, {"thing_id": 7})
    claimer, observer = raw_connection(autocommit=False), raw_connection()
    results: list[Job | None] = []
    try:
        claimer.execute("SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [job.pk])
        claimer.execute("UPDATE jobs_job SET status = 'running', locked_by = 'w1' WHERE id = %s", [job.pk])
        thread = in_thread(lambda: results.append(jobs.cancel_if_queued(KEYED, thing_id=7)))
        wait_for(lambda: lock_waiters(observer) >= 1, timeout=10, message="cancel to wait on the claim")
        claimer.commit()
        thread.join(10)
    finally:
        claimer.close()
        observer.close()
    assert results == [None]
    job.refresh_from_db()
    assert job.status == Status.RUNNING


# --- twins racing -----------------------------------------------------------------------------


@pytest.mark.skipif(not on_mariadb(), reason="MariaDB's turns for twins' inserts")
@pytest.mark.django_db(transaction=True)  # another session holds the key's lock
def test_enqueue__twins_on_mariadb_insert_one_at_a_time_and_leave_the_key_free():
    """A twin waits for the key's insert lock another session holds (so that two inserts
    of one key never both hold InnoDB's gap lock on a finished twin's index entry and
    deadlock), and frees it once its INSERT is done."""
    from jobs.drivers import mariadb

    key = mariadb.dedupe_lock_key(KEYED, "thing:9")
    holder = raw_connection()
    try:
        assert holder.execute(mariadb.LOCK_DEDUPE_INSERT, [key, 0]).fetchone() == (1,)
        done: list[int] = []
        thread = in_thread(lambda: done.append(jobs.enqueue(KEYED, {"thing_id": 9}).pk))
        wait_for(lambda: _waits_on_user_lock(holder), message="the enqueue to wait for the key's lock")
        assert not done
        holder.execute(mariadb.UNLOCK_DEDUPE_INSERT, [key])
        thread.join(10)
        assert len(done) == 1
        assert holder.execute(mariadb.LOCK_DEDUPE_INSERT, [key, 0]).fetchone() == (1,)  # freed
    finally:
        holder.close()


def _waits_on_user_lock(session) -> bool:
    rows = session.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'")
    return rows.fetchone()[0] >= 1


@pytest.mark.django_db(transaction=True)  # another session must see or wait on our rows
def test_enqueue__concurrent_twins_of_one_payload_give_one_job():
    """Six producers enqueue the same thing at once, each in its own transaction: the
    partial unique index makes the late ones wait, then return the first one's job."""
    barrier = threading.Barrier(6)
    ids: list[int] = []

    def add(n: int) -> None:
        barrier.wait(10)
        with transaction.atomic():
            ids.append(jobs.enqueue(KEYED, {"thing_id": 7, "note": str(n)}).pk)

    for thread in [in_thread(lambda n=n: add(n)) for n in range(6)]:
        thread.join(10)
    assert len(ids) == 6 and len(set(ids)) == 1
    assert Job.objects.filter(type=KEYED).count() == 1
    assert jobs.active_job(KEYED, thing_id=7).pk == ids[0]


# --- operator actions -------------------------------------------------------------------------


def test_dismiss__is_public_and_takes_a_job_or_its_id():
    first, second = jobs.enqueue("test.fail", {}), jobs.enqueue("test.fail", {})
    Job.objects.update(status=Status.FAILED)

    assert jobs.dismiss(first).dismissed_at is not None
    assert jobs.dismiss(second.pk).dismissed_at is not None
    assert Job.objects.filter(dismissed_at__isnull=False).count() == 2


# --- every job about one subject, across types ----------------------------------------------


def test_jobs_about__finds_the_jobs_of_every_type_keyed_by_those_fields_newest_first():
    first = jobs.enqueue("repository.ingest", {"repository_id": 7})
    _finish(first)
    analysis = jobs.enqueue("repository.analyse", {"repository_id": 7})
    jobs.enqueue("repository.ingest", {"repository_id": 8})
    jobs.enqueue("workspace.provision", {"workspace_id": 7})

    assert list(jobs.jobs_about(repository_id=7)) == [analysis, first]
    assert list(jobs.jobs_about(repository_id=9)) == []


def test_latest_jobs_about__reads_the_newest_job_of_each_subject_in_one_query(django_assert_num_queries):
    from jobs import queries

    old = jobs.enqueue("repository.ingest", {"repository_id": 1})
    _finish(old)
    newest_of_1 = jobs.enqueue("repository.analyse", {"repository_id": 1})
    only_of_2 = jobs.enqueue("repository.ingest", {"repository_id": 2})

    with django_assert_num_queries(1):
        latest = queries.latest_jobs_about("repository_id", [1, 2, 3])

    assert latest == {1: newest_of_1, 2: only_of_2}


# --- the admin's addresses --------------------------------------------------------------------


def test_admin_url__is_the_jobs_page_and_the_filtered_list():
    job = jobs.enqueue(KEYED, {"thing_id": 1})
    assert jobs.admin_url(job) == jobs.admin_url(job.pk) == f"/admin/platform/job/{job.pk}/change/"
    assert jobs.admin_list_url() == "/admin/platform/job/"
    assert (
        jobs.admin_list_url(type="test.keyed", status="queued")
        == "/admin/platform/job/?type=test.keyed&status=queued"
    )
