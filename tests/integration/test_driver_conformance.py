"""One suite every driver passes (as River runs every driver through ``riverdrivertest``):
each verb's contract, the fence, SKIP LOCKED under two sessions, dedupe races, take-back,
counts, wake-up and timer locks.

It runs the driver of this run's database: PostgreSQL or MariaDB (``DATABASE_URL``), and
SQLite, the embedded default, through ``test_the_sqlite_driver_passes_the_suite``, which runs
this module again in a process of its own on a SQLite database. The drivers are called
directly: the store's policy above them is tested in the store's own tests.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import store
from jobs.drivers import Driver, driver_class
from jobs.drivers.protocol import Batch, GateSave, Leased, Locks, StepRow
from jobs.models import Job, JobAttempt, Status, Worker, Workflow, WorkflowEdge, WorkflowStep
from tests.support.paths import ROOT
from tests.support.waiting import wait_for

conformance = pytest.mark.django_db(transaction=True)


@pytest.fixture
def drv() -> Driver:
    """A driver of the run's database, made afresh (not the engine's chosen one)."""
    return driver_class(connections[DEFAULT_DB_ALIAS].vendor)(DEFAULT_DB_ALIAS)


@pytest.mark.slow
@pytest.mark.skipif(connections[DEFAULT_DB_ALIAS].vendor == "sqlite", reason="this run is on SQLite already")
def test_the_sqlite_driver_passes_the_suite(tmp_path):
    """The suite again, in a process of its own on a SQLite database (the embedded default)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", __file__],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'embedded.sqlite3'}"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout


def _locks_rows(drv: Driver) -> bool:
    """Whether the database locks rows (SQLite locks the whole database at BEGIN)."""
    return drv.vendor != "sqlite"


def _fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "type": "test.noop",
        "queue": "default",
        "priority": 0,
        "payload": {"n": 1},
        "max_attempts": 3,
        "dedupe_key": None,
        "concurrency_key": None,
        "rate_key": None,
    }
    fields.update(overrides)
    return fields


def _insert(drv: Driver, **overrides: Any) -> Job:
    fields = _fields(**overrides)
    job = drv.insert_one(fields, json.dumps(fields["payload"]))
    assert job is not None
    return job


def _rows(drv: Driver) -> Any:
    return Job.objects.using(drv.alias)


def _in_thread(alias: str, work: Callable[[], Any]) -> Callable[[], Any]:
    """Run ``work`` on a thread of its own (so on a session of its own); the returned
    function joins it and gives its result, or raises what it raised."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the joining test
            outcome["error"] = exc
        finally:
            connections[alias].close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join() -> Any:
        thread.join(timeout=120)
        assert not thread.is_alive(), "the other session did not finish"
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    return join


# --- insert -------------------------------------------------------------------------------


@conformance
def test_insert_one__adds_a_queued_job_with_the_databases_times(drv):
    job = _insert(drv, payload={"n": 7})
    row = _rows(drv).get(pk=job.pk)
    assert (row.status, row.payload, row.attempts, row.queue) == (Status.QUEUED, {"n": 7}, 0, "default")
    assert job.run_at == row.run_at and job.created_at == row.created_at
    assert row.run_at <= timezone.now()


@conformance
def test_insert_one__keeps_a_given_run_at(drv):
    later = timezone.now() + timedelta(hours=1)
    job = _insert(drv, run_at=later)
    assert _rows(drv).get(pk=job.pk).run_at == later


@conformance
def test_insert_one__refuses_a_second_active_job_of_a_dedupe_key(drv):
    first = _insert(drv, dedupe_key="k")
    fields = _fields(dedupe_key="k")
    assert drv.insert_one(fields, "{}") is None
    _rows(drv).filter(pk=first.pk).update(status=Status.SUCCEEDED)
    assert drv.insert_one(fields, "{}") is not None, "a finished job's key is free again"
    assert _rows(drv).filter(dedupe_key="k").count() == 2


@conformance
def test_insert_one__a_dedupe_race_inserts_one_job(drv):
    """Two sessions insert the same key at once: one job, and the other is told so."""
    inserted = threading.Event()

    def first() -> Job | None:
        with transaction.atomic(using=drv.alias):
            job = drv.insert_one(_fields(dedupe_key="race"), "{}")
            inserted.set()
            # Held open until the second session is about to try the key.
            wait_for(second_started.is_set, message="the second session to start")
            return job

    second_started = threading.Event()
    join_first = _in_thread(drv.alias, first)
    wait_for(inserted.is_set, message="the first insert")

    def second() -> Job | None:
        second_started.set()
        return drv.insert_one(_fields(dedupe_key="race"), "{}")

    join_second = _in_thread(drv.alias, second)
    outcomes = [join_first(), join_second()]
    assert outcomes[0] is not None and outcomes[1] is None
    assert _rows(drv).filter(dedupe_key="race").count() == 1


@conformance
def test_insert_many__skips_active_and_repeated_keys_and_counts_what_it_added(drv):
    _insert(drv, dedupe_key="a")
    batch = Batch(
        type="test.noop",
        queue="default",
        priority=0,
        max_attempts=3,
        run_at=None,
        payloads=['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}'],
        dedupe_keys=["a", "b", "b", None],
    )
    assert drv.insert_many(batch) == 2
    assert sorted(row.payload["n"] for row in _rows(drv).exclude(dedupe_key="a")) == [2, 4]
    assert set(_rows(drv).values_list("status", flat=True)) == {Status.QUEUED}


# --- claim ----------------------------------------------------------------------------------


@conformance
def test_claim__takes_due_jobs_of_its_queues_in_claim_order_and_names_their_queue(drv):
    now = timezone.now()
    low = _insert(drv, priority=50, run_at=now - timedelta(seconds=3))
    old = _insert(drv, run_at=now - timedelta(seconds=2))
    new = _insert(drv, run_at=now - timedelta(seconds=1))
    urgent = _insert(drv, priority=-100, queue="mail", run_at=now - timedelta(seconds=1))
    _insert(drv, run_at=now + timedelta(hours=1))  # not due
    _insert(drv, queue="other")  # not one of the queues

    claimed = drv.claim("w1", ["default", "mail"], 10)

    assert [job.id for job in claimed] == [urgent.pk, old.pk, new.pk, low.pk]
    assert [job.queue for job in claimed] == ["mail", "default", "default", "default"]
    assert {(job.attempt, job.max_attempts) for job in claimed} == {(1, 3)}
    assert json.loads(claimed[0].payload) == {"n": 1}
    row = _rows(drv).get(pk=old.pk)
    assert (row.status, row.locked_by, row.attempts) == (Status.RUNNING, "w1", 1)
    assert row.started_at is not None and row.heartbeat_at is not None


@conformance
def test_claim__one_queue_and_a_limit(drv):
    ids = [_insert(drv).pk for _ in range(3)]
    assert [job.id for job in drv.claim("w1", ["default"], 2)] == ids[:2]
    assert [job.id for job in drv.claim("w2", ["default"], 2)] == ids[2:]
    assert drv.claim("w3", ["default"], 2) == []


@conformance
def test_claim__two_sessions_at_once_take_disjoint_jobs(drv):
    """The first session claims and holds its transaction open while the second claims:
    where rows are locked (SKIP LOCKED) the second takes other rows at once; on SQLite it
    waits for the first to commit and then takes the rest."""
    ids = {_insert(drv).pk for _ in range(6)}
    claimed_first = threading.Event()
    second_done = threading.Event()

    def first() -> list[int]:
        with transaction.atomic(using=drv.alias):
            taken = [job.id for job in drv.claim("w1", ["default"], 3)]
            claimed_first.set()
            if _locks_rows(drv):  # the second claim must not wait on these locks
                wait_for(second_done.is_set, timeout=60, message="the second claim")
            return taken

    join_first = _in_thread(drv.alias, first)
    wait_for(claimed_first.is_set, message="the first claim")

    def second() -> list[int]:
        try:
            return [job.id for job in drv.claim("w2", ["default"], 10)]
        finally:
            second_done.set()

    taken_second = _in_thread(drv.alias, second)()
    taken_first = join_first()
    assert len(taken_first) == 3
    assert set(taken_first).isdisjoint(taken_second)
    assert set(taken_first) | set(taken_second) == ids


# --- finish, fenced -------------------------------------------------------------------------


@conformance
def test_claim__unkeyed_passes_over_jobs_with_limit_keys(drv):
    keyed = _insert(drv, concurrency_key="k:1")
    rated = _insert(drv, rate_key="r:1")
    plain = _insert(drv)
    assert [job.id for job in drv.claim("w", ["default"], 10, unkeyed=True)] == [plain.pk]
    assert _rows(drv).get(pk=keyed.pk).status == _rows(drv).get(pk=rated.pk).status == Status.QUEUED


@conformance
@pytest.mark.parametrize("queues", [["default"], ["default", "mail"]])
def test_flow_candidates__of_a_queue_with_limits_of_its_own_are_its_jobs_of_both_kinds_in_claim_order(
    drv, queues
):
    """A queue with limits of its own: its jobs with limit keys and without, in one claim
    order (on MariaDB, two reads merged), up to the limit, the keys at their limit left out."""
    last = _insert(drv, priority=9)
    keyed = _insert(drv, concurrency_key="k:1", priority=1, queue=queues[-1])
    plain = _insert(drv, priority=2)
    rated = _insert(drv, rate_key="r:1", priority=3)
    _insert(drv, concurrency_key="k:full", priority=0)
    with transaction.atomic(using=drv.alias):
        found = drv.flow_candidates(queues, 3, ["k:full"], [])
    assert [candidate.id for candidate in found] == [keyed.pk, plain.pk, rated.pk]
    assert (found[0].concurrency_key, found[2].rate_key) == ("k:1", "r:1")
    with transaction.atomic(using=drv.alias):
        assert [candidate.id for candidate in drv.flow_candidates(queues, 10, [], [])][-1] == last.pk


@conformance
@pytest.mark.parametrize("queues", [["default"], ["default", "mail"]])
def test_claim__plain_takes_the_keyed_jobs_too(drv, queues):
    """A queue whose types have no limits in this worker's code (the plain claim) takes the
    jobs that carry limit keys too (enqueued under limits a type no longer has, or that a
    newer release declares), within the claim's limit; on MariaDB, which keeps them in
    indexes of their own, after the plain ones."""
    keyed = _insert(drv, concurrency_key="k:1")
    rated = _insert(drv, rate_key="r:1", queue=queues[-1])
    plain = _insert(drv)
    first = [job.id for job in drv.claim("w", queues, 2)]
    rest = [job.id for job in drv.claim("w", queues, 10)]
    assert len(first) == 2 and len(rest) == 1
    assert {*first, *rest} == {keyed.pk, rated.pk, plain.pk}


@conformance
def test_claim__leased_takes_only_the_leased_type_storing_its_keys_and_none_after_the_end(drv):
    leased = _insert(drv, type="t", concurrency_key="type:t", rate_key="type:t")
    _insert(drv, type="t", concurrency_key="k:1", rate_key="type:t")  # other keys: counted instead
    _insert(drv, type="u", concurrency_key="type:u", rate_key="type:u")
    _insert(drv, type="t")  # no keys: the plain claim's
    lease = Leased("t", "type:t", "type:t", timezone.now() + timedelta(minutes=1))
    assert [job.id for job in drv.claim("w", ["default"], 10, leased=lease)] == [leased.pk]
    later = _insert(drv, type="t", concurrency_key="type:t", rate_key="type:t")
    ended = lease._replace(until=timezone.now() - timedelta(seconds=1))
    assert drv.claim("w", ["default"], 10, leased=ended) == []
    assert _rows(drv).get(pk=later.pk).status == Status.QUEUED


@conformance
def test_flow_save_gates__keeps_a_gates_leases_unless_told_and_a_round_reads_them(drv):
    drv.flow_add_gates(["type:t"])
    held = '[[9,64,"w1"]]'
    with drv.flow_transaction() as round_:
        round_.lock_and_count(["type:t"], [], [])
        round_.finish("w", [], None, {}, {"type:t": GateSave("[[1,1]]", leases=held)})
    with drv.flow_transaction() as round_:
        round_.lock_and_count(["type:t"], [], [])
        round_.finish("w", [], None, {}, {"type:t": GateSave("[[2,1]]")})  # leases: as stored
    assert (drv.gates().get(key="type:t").recent, drv.gates().get(key="type:t").leases) == ("[[2,1]]", held)
    with drv.flow_transaction() as round_:
        recent, _ = round_.lock_and_count(["type:t"], [], [])
    assert json.loads(recent["type:t"]) == {"starts": [[2, 1]], "leases": [[9, 64, "w1"]]}


@conformance
def test_flow_transaction__a_round_locks_candidates_counts_under_its_gates_and_commits(drv):
    first = _insert(drv, concurrency_key="k:1", rate_key="r:1")
    full = _insert(drv, concurrency_key="k:2")
    _insert(drv, concurrency_key="k:2", run_at=timezone.now() + timedelta(hours=1))  # not due
    _insert(drv)  # no key: left to the plain claim
    running = _insert(drv, concurrency_key="k:2")
    _rows(drv).filter(pk=running.pk).update(status=Status.RUNNING)
    drv.flow_add_gates(["k:1", "k:2", "r:1", "type:t"])
    drv.flow_add_gates(["k:1"])  # twice: no error
    with drv.flow_transaction() as round_:
        found, early, counted_first = round_.candidates(
            ["default"], 10, [], [], keyed_only=True, first=Locks(["type:t"], ["type:t"], ["default"])
        )
        assert [c.id for c in found] == [first.pk, full.pk]
        assert found[0][3:] == ("k:1", "r:1")
        assert early == {"type:t": ""} and counted_first.queues == {"default": 1}  # locked before them
        assert round_.candidates(["default"], 10, ["k:2"], ["r:1"], keyed_only=True)[0] == []  # left out
        recent, counted = round_.lock_and_count(["k:1", "k:2", "r:1", "k:9"], ["k:1", "k:2"], ["default"])
        assert recent == {"k:1": "", "k:2": "", "r:1": ""}  # no gate, no lock: k:9 left out
        assert (counted.keys, counted.queues) == ({"k:2": 1}, {"default": 1})
        assert abs(counted.now / 1e6 - timezone.now().timestamp()) < 60
        claimed = round_.finish(
            "w", [first.pk], None, {first.pk: ("k:1", None)}, {"r:1": GateSave("[[1,1]]")}
        )
    assert [(job.id, job.attempt, job.queue) for job in claimed] == [(first.pk, 1, "default")]
    row = _rows(drv).get(pk=first.pk)
    assert (row.status, row.locked_by, row.concurrency_key, row.rate_key) == (
        Status.RUNNING,
        "w",
        "k:1",
        None,
    )
    assert _rows(drv).get(pk=full.pk).status == Status.QUEUED
    assert drv.gates().get(key="r:1").recent == "[[1,1]]"


@conformance
def test_flow_transaction__an_error_changes_nothing_and_leaves_no_lock(drv):
    job = _insert(drv, concurrency_key="k:1")
    drv.flow_add_gates(["k:1"])
    with pytest.raises(RuntimeError), drv.flow_transaction() as round_:
        round_.candidates(["default"], 10, [], [])
        round_.lock_and_count(["k:1"], ["k:1"], [])
        raise RuntimeError("the store changed its mind")
    # Another session takes the job and the gate at once: nothing is held.
    other = _in_thread(drv.alias, lambda: _one_round(drv, job.pk))
    assert other() == [job.pk]


def _one_round(drv: Driver, job_id: int) -> list[int]:
    with drv.flow_transaction() as round_:
        round_.candidates(["default"], 10, [], [])
        round_.lock_and_count(["k:1"], ["k:1"], [])
        return [claimed.id for claimed in round_.finish("w2", [job_id], timezone.now(), {}, {})]


@conformance
def test_flow_transaction__take_marks_the_candidates_running_at_once_and_end_undoes_it(drv):
    first = _insert(drv, concurrency_key="type:t", rate_key="type:t")
    second = _insert(drv, concurrency_key="type:t", rate_key="type:t", priority=-1)  # first in claim order
    _insert(drv)  # no key: left to the plain claim
    running = _insert(drv, concurrency_key="type:t")
    _rows(drv).filter(pk=running.pk).update(status=Status.RUNNING)
    drv.flow_add_gates(["type:t"])
    with drv.flow_transaction() as round_:
        if not round_.takes:
            pytest.skip(f"the {drv.vendor or 'portable'} driver claims flow-limited jobs step by step")
        taken = round_.take(
            "w", ["default"], 10, [], [], keyed_only=True, first=Locks(["type:t"], ["type:t"], [])
        )
        assert [c.id for c in taken.candidates] == [job.id for job in taken.jobs] == [second.pk, first.pk]
        assert taken.candidates[0][2:] == ("default", "type:t", "type:t")
        assert taken.recent == {"type:t": ""} and taken.running.keys == {"type:t": 1}  # counted before
        assert [job.attempt for job in taken.jobs] == [1, 1]
        round_.end()  # the store found one without room: nothing of it stays
        assert _rows(drv).get(pk=first.pk).status == Status.QUEUED
        taken = round_.take(
            "w", ["default"], 1, [], [], keyed_only=True, first=Locks(["type:t"], ["type:t"], [])
        )
        round_.finish("w", [], None, {}, {"type:t": GateSave("[[1,1]]", 5, 7, 9, "concurrency 10, rate -")})
    row = _rows(drv).get(pk=second.pk)
    assert (row.status, row.locked_by, row.attempts) == (Status.RUNNING, "w", 1)
    # Started at the clock the round says it decided at.
    assert abs(row.started_at.timestamp() * 1e6 - taken.running.now) < 1
    assert _rows(drv).get(pk=first.pk).status == Status.QUEUED
    gate = drv.gates().get(key="type:t")
    assert (gate.recent, gate.spare_slots, gate.spare_starts, gate.spare_until, gate.spare_basis) == (
        "[[1,1]]",
        5,
        7,
        9,
        "concurrency 10, rate -",
    )


@conformance
def test_flow_prune_gates__deletes_what_the_predicate_lets_go(drv):
    drv.flow_add_gates(["a", "b", "c"])
    assert drv.flow_prune_gates(lambda key, recent: key == "b", batch_size=2) == 2
    assert list(drv.gates().values_list("key", flat=True)) == ["b"]


@conformance
def test_complete_many__applies_only_to_jobs_still_running_under_the_worker_and_attempt(drv):
    mine, stale, theirs = (_insert(drv).pk for _ in range(3))
    claimed = {job.id: job for job in drv.claim("w1", ["default"], 3)}
    _rows(drv).filter(pk=theirs).update(locked_by="w2")

    applied = drv.complete_many("w1", [(mine, 1), (stale, 2), (theirs, 1)], None)

    assert [job.id for job in applied] == [mine]
    # With what the rollup of finished tries needs: queue, type, wait and run in seconds.
    done = applied[0]
    assert (done.queue, done.type) == ("default", _rows(drv).get(pk=mine).type)
    assert done.waited is not None and 0 <= done.waited < 60
    assert done.ran is not None and 0 <= done.ran < 60
    assert _rows(drv).get(pk=mine).status == Status.SUCCEEDED
    assert _rows(drv).get(pk=mine).finished_at is not None
    assert set(_rows(drv).filter(pk__in=[stale, theirs]).values_list("status", flat=True)) == {Status.RUNNING}
    assert claimed[mine].attempt == 1


@conformance
def test_complete_many__gives_each_jobs_times_as_its_row_holds_them(drv):
    """Every job applied (on MariaDB the times then come from what the claim kept, not a
    read of the rows): its wait is due to started, its run started to finished."""
    first, second = _insert(drv).pk, _insert(drv).pk
    drv.claim("w1", ["default"], 2)
    applied = {job.id: job for job in drv.complete_many("w1", [(first, 1), (second, 1)], None)}
    assert sorted(applied) == [first, second]
    for row in _rows(drv).filter(pk__in=[first, second]):
        assert applied[row.pk].waited == pytest.approx(
            (row.started_at - row.run_at).total_seconds(), abs=1e-6
        )
        assert applied[row.pk].ran == pytest.approx(
            (row.finished_at - row.started_at).total_seconds(), abs=1e-6
        )
        assert (applied[row.pk].queue, applied[row.pk].type) == (row.queue, row.type)


@conformance
def test_complete_many__stores_each_jobs_result(drv):
    first, second = _insert(drv).pk, _insert(drv).pk
    drv.claim("w1", ["default"], 2)
    applied = drv.complete_many("w1", [(first, 1), (second, 1)], ['{"sum": 5}', "null"])
    assert sorted(job.id for job in applied) == [first, second]
    assert _rows(drv).get(pk=first).result == {"sum": 5}
    assert _rows(drv).get(pk=second).result is None


@conformance
def test_add_to_rollup__adds_to_existing_rows_and_creates_new_ones(drv):
    from jobs.models import Rollup

    minute = timezone.now().replace(second=0, microsecond=0)
    drv.add_to_rollup(
        [(1, minute, "q", "t", "succeeded", "r", 5, 3), (1, minute, "q", "t", "succeeded", "w", 0, 3)]
    )
    drv.add_to_rollup(
        [(1, minute, "q", "t", "succeeded", "r", 5, 2), (15, minute, "q", "t", "failed", "r", 7, 1)]
    )

    rows = Rollup.objects.using(drv.alias).order_by("span", "measure", "bucket")
    assert [(row.span, row.outcome, row.measure, row.bucket, row.tries) for row in rows] == [
        (1, "succeeded", "r", 5, 5),
        (1, "succeeded", "w", 0, 3),
        (15, "failed", "r", 7, 1),
    ]
    assert rows[0].minute == minute


@conformance
def test_set_state_if_running__refuses_a_stale_attempt(drv):
    job = _insert(drv)
    drv.claim("w1", ["default"], 1)
    assert not drv.set_state_if_running("w1", job.pk, 2, progress=50)
    assert not drv.set_state_if_running("w2", job.pk, 1, progress=50)
    assert _rows(drv).get(pk=job.pk).progress is None
    assert drv.set_state_if_running("w1", job.pk, 1, progress=50)
    assert _rows(drv).get(pk=job.pk).progress == 50


@conformance
def test_lock_if_running__finds_only_the_current_attempt(drv):
    job = _insert(drv)
    drv.claim("w1", ["default"], 1)
    with transaction.atomic(using=drv.alias):
        assert drv.lock_if_running("w1", job.pk, 2) is None
        locked = drv.lock_if_running("w1", job.pk, 1)
    assert locked is not None and locked.pk == job.pk


# --- jobs due later -------------------------------------------------------------------------


@conformance
def test_due_later__never_claimed_before_its_time_and_claimed_once_promoted_when_due(drv):
    run_at = timezone.now() + timedelta(seconds=1.5)
    job = _insert(drv, run_at=run_at, due_later=True)
    assert drv.claim("w1", ["default"], 10) == []
    waiting = drv.promote_due(100)
    assert (waiting.promoted, waiting.queues) == (0, [])
    assert waiting.next_due_in is not None and 0 < waiting.next_due_in <= 1.5

    def promoted() -> bool:
        assert drv.claim("w1", ["default"], 10) == [], "claimed before its promotion"
        return drv.promote_due(100).promoted == 1

    wait_for(promoted, timeout=30, interval=0.02, message="the job's promotion")
    assert timezone.now() >= run_at, "promoted before its time"
    assert [claimed.id for claimed in drv.claim("w1", ["default"], 10)] == [job.pk]


@conformance
def test_due_later__many_waiting_jobs_change_no_claim(drv):
    """Jobs due later, more urgent than the due ones and as many as a claim would read,
    are neither claimed nor promoted, and the claim's answer is the same as without them."""
    later = timezone.now() + timedelta(hours=1)
    waiting = Batch(
        type="test.noop",
        queue="default",
        priority=-100,
        max_attempts=3,
        run_at=later,
        payloads=["{}"] * 500,
        dedupe_keys=[None] * 500,
        due_later=True,
    )
    assert drv.insert_many(waiting) == 500
    due = [_insert(drv, priority=priority).pk for priority in (50, 0, 0)]

    assert [job.id for job in drv.claim("w1", ["default", "mail"], 10)] == [due[1], due[2], due[0]]
    promotion = drv.promote_due(1000)
    assert promotion.promoted == 0
    assert promotion.next_due_in is not None and 3500 < promotion.next_due_in <= 3600
    assert _rows(drv).filter(status=Status.QUEUED, due_later=True).count() == 500


@conformance
def test_due_later__promoted_earliest_first_in_batches_and_their_queues_told(drv):
    now = timezone.now()
    ids = [
        _insert(drv, queue=queue, run_at=now - timedelta(seconds=age), due_later=True).pk
        for queue, age in (("default", 3), ("mail", 4), ("default", 2), ("ai", 1))
    ]
    first = drv.promote_due(2)
    assert (first.promoted, first.queues) == (2, ["default", "mail"])
    assert first.next_due_in is not None and first.next_due_in <= 0, "two are due already"
    assert sorted(job.id for job in drv.claim("w1", ["default", "mail", "ai"], 10)) == sorted(ids[:2])
    rest = drv.promote_due(10)
    assert (rest.promoted, rest.queues, rest.next_due_in) == (2, ["ai", "default"], None)
    assert drv.promote_due(10).promoted == 0
    assert sorted(job.id for job in drv.claim("w1", ["default", "ai"], 10)) == sorted(ids[2:])


@conformance
def test_due_later__its_dedupe_key_stays_taken_while_it_waits(drv):
    _insert(drv, dedupe_key="k", run_at=timezone.now() + timedelta(hours=1), due_later=True)
    assert drv.insert_one(_fields(dedupe_key="k"), "{}") is None


@conformance
def test_due_later__a_retrys_backoff_with_the_stores_policy(drv):
    """A failed try is queued again for after its backoff: it reads queued, no claim takes
    it before then, and once its time has come a promotion hands it to the next claim."""
    job = store.enqueue("test.flaky", {"fail_times": 1})
    [claimed] = store.claim("w1", ["default"], 1)
    failure = store.Failure("ConnectionError", "transient failure on try 1")
    assert store.fail("w1", claimed.id, claimed.attempt, failure) == Status.QUEUED
    row = Job.objects.get(pk=job.pk)
    assert row.status == Status.QUEUED and row.run_at > timezone.now() - timedelta(seconds=1)
    wait_for(
        lambda: store.promote_due().promoted == 1, timeout=30, interval=0.02, message="the retry's promotion"
    )
    assert timezone.now() >= row.run_at
    [again] = store.claim("w2", ["default"], 1)
    assert (again.id, again.attempt) == (job.pk, 2)


@conformance
def test_due_later__promotion_notifies_the_queues_where_the_driver_listens(drv):
    if not drv.listens:
        pytest.skip("workers poll on this database")
    _insert(drv, queue="mail", run_at=timezone.now() - timedelta(seconds=1), due_later=True)
    session = connections.create_connection(drv.alias)
    try:
        notices = drv.listen(session)
        assert drv.promote_due(10).queues == ["mail"]  # autocommit: delivered at once
        wait_for(lambda: "mail" in notices.drain(), message="the promoted queue's notice")
    finally:
        session.close()


# --- recovery and housekeeping --------------------------------------------------------------


@conformance
def test_reap__finds_silent_jobs_and_those_of_dead_workers(drv):
    now = timezone.now()
    silent, orphaned, alive = (_insert(drv).pk for _ in range(3))
    drv.claim("w1", ["default"], 3)
    _rows(drv).filter(pk=silent).update(heartbeat_at=now - timedelta(minutes=10))
    _rows(drv).filter(pk=orphaned).update(locked_by="dead")
    _rows(drv).filter(pk=alive).update(locked_by="alive")
    workers = Worker.objects.using(drv.alias)
    workers.create(name="dead", host="h", pid=1, last_seen=now - timedelta(minutes=5))
    workers.create(name="alive", host="h", pid=2, last_seen=now)

    with transaction.atomic(using=drv.alias):
        found = drv.reap(now - timedelta(minutes=5), now - timedelta(minutes=1), 100)
    assert sorted(job.pk for job in found) == sorted([silent, orphaned])


@conformance
def test_reap__two_reapers_split_the_rows(drv):
    if not _locks_rows(drv):
        pytest.skip("SQLite serialises whole transactions: one reaper runs at a time")
    now = timezone.now()
    for _ in range(4):
        _insert(drv)
    drv.claim("w1", ["default"], 4)
    _rows(drv).update(heartbeat_at=now - timedelta(minutes=10))
    reaped_first = threading.Event()
    second_done = threading.Event()

    def first() -> list[int]:
        with transaction.atomic(using=drv.alias):
            taken = [job.pk for job in drv.reap(now, now - timedelta(minutes=1), 2)]
            reaped_first.set()
            wait_for(second_done.is_set, timeout=60, message="the second reaper")
            return taken

    join_first = _in_thread(drv.alias, first)
    wait_for(reaped_first.is_set, message="the first reaper")

    def second() -> list[int]:
        try:
            with transaction.atomic(using=drv.alias):
                return [job.pk for job in drv.reap(now, now - timedelta(minutes=1), 10)]
        finally:
            second_done.set()

    taken_second = _in_thread(drv.alias, second)()
    taken_first = join_first()
    assert len(taken_first) == 2 and len(taken_second) == 2
    assert set(taken_first).isdisjoint(taken_second)


@conformance
def test_take_back__finds_the_running_jobs_of_one_worker(drv):
    mine, theirs, queued = (_insert(drv).pk for _ in range(3))
    drv.claim("w1", ["default"], 2)
    _rows(drv).filter(pk=theirs).update(locked_by="w2")
    with transaction.atomic(using=drv.alias):
        assert [job.pk for job in drv.take_back("w1", 100)] == [mine]
    assert _rows(drv).get(pk=queued).status == Status.QUEUED


@conformance
def test_take_back__with_the_stores_policy_the_job_waits_out_its_backoff(drv):
    job = store.enqueue("test.noop", {})
    store.claim("w1", ["default"], 1)
    before = timezone.now()
    assert store.recover_worker("w1") == store.ReapResult(requeued=1)
    row = Job.objects.get(pk=job.pk)
    assert row.status == Status.QUEUED and row.locked_by is None
    assert row.run_at >= before + timedelta(seconds=25), "the first backoff of test.noop"
    assert JobAttempt.objects.get(job=row).error_class == "WorkerLost"


@conformance
def test_prune__deletes_finished_jobs_past_the_cutoff_and_keeps_the_failed_list(drv):
    now = timezone.now()
    old = now - timedelta(days=30)
    done = _insert(drv).pk
    cancelled = _insert(drv).pk
    dismissed = _insert(drv).pk
    failed = _insert(drv).pk
    recent = _insert(drv).pk
    queued = _insert(drv).pk
    _rows(drv).filter(pk=done).update(status=Status.SUCCEEDED, finished_at=old)
    _rows(drv).filter(pk=cancelled).update(status=Status.CANCELLED, finished_at=old)
    _rows(drv).filter(pk=dismissed).update(status=Status.FAILED, finished_at=old, dismissed_at=old)
    _rows(drv).filter(pk=failed).update(status=Status.FAILED, finished_at=old)
    _rows(drv).filter(pk=recent).update(status=Status.SUCCEEDED, finished_at=now)

    cutoff = now - timedelta(days=14)
    assert drv.prune(cutoff, cutoff, batch_size=2) == 3
    assert sorted(_rows(drv).values_list("pk", flat=True)) == sorted([failed, recent, queued])


@conformance
def test_is_conflict__a_deadlock_between_two_sessions_is_one_and_a_lost_connection_is_not(drv):
    """Two sessions lock two rows in opposite orders: the database rolls one back, and the
    driver calls that error a conflict (the worker tries again at once, see
    ``jobs.worker.guard``); an error of a database that cannot be reached is not one."""
    if not _locks_rows(drv):
        pytest.skip("SQLite locks the whole database: two sessions cannot deadlock on rows")
    first_id, second_id = _insert(drv).pk, _insert(drv).pk
    holding = {"first": threading.Event(), "second": threading.Event()}

    def lock_in_turn(mine: str, other: str, order: tuple[int, int]) -> BaseException | None:
        try:
            with transaction.atomic(using=drv.alias):
                _rows(drv).select_for_update().get(pk=order[0])
                holding[mine].set()
                wait_for(holding[other].is_set, timeout=60, message=f"the {other} session's lock")
                _rows(drv).select_for_update().get(pk=order[1])
        except OperationalError as exc:
            return exc
        return None

    join_first = _in_thread(drv.alias, lambda: lock_in_turn("first", "second", (first_id, second_id)))
    join_second = _in_thread(drv.alias, lambda: lock_in_turn("second", "first", (second_id, first_id)))
    errors = [error for error in (join_first(), join_second()) if error is not None]
    assert len(errors) == 1, errors  # the database chose one to roll back; the other went on
    assert drv.is_conflict(errors[0]), errors[0]
    assert not drv.is_conflict(OperationalError("connection refused\nIs the server running?"))


# --- wake-up --------------------------------------------------------------------------------


@conformance
def test_notify__reaches_a_listening_session_where_the_driver_listens(drv):
    if not drv.listens:
        with pytest.raises(NotImplementedError):
            drv.listen(connections.create_connection(drv.alias))
        drv.notify(["default"])  # a no-op where workers poll
        return
    session = connections.create_connection(drv.alias)
    try:
        notices = drv.listen(session)
        drv.notify(["mail", "default"])  # autocommit: delivered at once
        received: set[str] = set()

        def both_received() -> bool:
            received.update(notices.drain())
            return received == {"mail", "default"}

        wait_for(both_received, message="the notices")
        assert not notices.closed and notices.fileno() > 0
    finally:
        session.close()


@conformance
def test_notify__a_notice_read_while_a_statement_ran_on_the_listening_session_is_drained_too(drv):
    """The client library may take a notice off the socket while it runs another statement
    on that session (say, the LISTEN itself): it is not lost to the next drain."""
    if not drv.listens:
        pytest.skip("workers poll on this database")
    session = connections.create_connection(drv.alias)
    try:
        notices = drv.listen(session)
        drv.notify(["mail"])
        wait_for(lambda: select.select([notices.fileno()], [], [], 0)[0], message="the notice on the socket")
        with session.cursor() as cursor:
            cursor.execute("SELECT 1")  # reads the notice as it reads its result
        assert not select.select([notices.fileno()], [], [], 0)[0], "the statement read the notice"
        assert notices.drain() == {"mail"}
        assert notices.drain() == set()  # once
    finally:
        session.close()


# --- timers ---------------------------------------------------------------------------------


@pytest.fixture
def sessions(drv: Driver) -> Iterator[list[Any]]:
    opened = [connections.create_connection(drv.alias) for _ in range(2)]
    yield opened
    for session in opened:
        session.close()


@conformance
def test_try_lock_steps__a_held_step_is_refused_to_another_session(drv, sessions):
    first, second = sessions
    with drv.try_lock_steps(first, ["sweep", "report"]) as held:
        assert held
        with drv.try_lock_steps(second, ["other", "report"]) as held_elsewhere:
            # SQLite runs on one host: nothing else runs a step beside it.
            assert held_elsewhere is (not _locks_rows(drv))
    with drv.try_lock_steps(second, ["report"]) as held_after:
        assert held_after, "released when the first run ended"


# --- reads ----------------------------------------------------------------------------------


@conformance
def test_task_rows__reads_the_rows_and_whether_each_was_tried(drv):
    tried, fresh = _insert(drv, payload={"args": [1], "kwargs": {}}), _insert(drv)
    JobAttempt.objects.using(drv.alias).create(job_id=tried.pk, type="test.noop", attempt=1, worker="w1")
    _rows(drv).filter(pk=fresh.pk).update(result={"r": 1})
    rows = {row.id: row for row in drv.task_rows([tried.pk, fresh.pk, 10**9])}
    assert set(rows) == {tried.pk, fresh.pk}
    assert (rows[tried.pk].tried, rows[fresh.pk].tried) == (True, False)
    assert json.loads(rows[tried.pk].payload) == {"args": [1], "kwargs": {}}
    assert json.loads(rows[fresh.pk].result) == {"r": 1} and rows[tried.pk].result is None
    assert rows[tried.pk].status == Status.QUEUED and rows[tried.pk].queue == "default"


@conformance
def test_newest_of_keys__matches_the_newest_job_of_each_key(drv):
    _insert(drv, dedupe_key="a", type="t.one")
    _rows(drv).update(status=Status.SUCCEEDED)
    newest_a = _insert(drv, dedupe_key="a", type="t.two")
    newest_b = _insert(drv, dedupe_key="b", type="t.one")
    _insert(drv, dedupe_key="c", type="t.one")  # not asked for
    _insert(drv, dedupe_key="b", type="t.other")  # not one of the types
    matched = _rows(drv).filter(drv.newest_of_keys(["a", "b"], ["t.one", "t.two"]))
    assert sorted(matched.values_list("pk", flat=True)) == sorted([newest_a.pk, newest_b.pk])


@conformance
def test_estimate_rows__is_a_count_estimate(drv):
    for _ in range(20):
        _insert(drv)
    if drv.vendor == "postgresql":
        drv.execute("ANALYZE jobs_job")
    elif drv.vendor == "mysql":
        drv.execute("ANALYZE TABLE jobs_job")
    estimate = drv.estimate_rows(Status.QUEUED)
    assert isinstance(estimate, int) and estimate >= 0
    if drv.vendor != "sqlite":  # SQLite has no estimate to give
        assert estimate > 0


@conformance
def test_failed__matches_the_failed_jobs_alone(drv):
    """On MariaDB the filter names ``failed``, which leads the failed lists' indexes: it
    still finds the failed jobs and no other."""
    made = {status: _insert(drv).pk for status in Status.values}
    for status, job_id in made.items():
        _rows(drv).filter(pk=job_id).update(status=status)
    assert list(_rows(drv).filter(drv.failed()).values_list("pk", flat=True)) == [made[Status.FAILED]]


@conformance
def test_due__matches_the_queued_jobs_whose_time_has_come_alone(drv):
    """On MariaDB the filter names the columns that lead the indexes of queued jobs
    (``claim_ready``, ``flow_due``, ``due_at``): it still finds every queued job due by
    then, plain, keyed, or due later and not promoted yet, and no other."""
    now = timezone.now()
    plain = _insert(drv).pk
    keyed = _insert(drv, concurrency_key="account:a").pk
    unpromoted, later = _insert(drv).pk, _insert(drv).pk
    _rows(drv).filter(pk=unpromoted).update(run_at=now - timedelta(seconds=1), due_later=True)
    _rows(drv).filter(pk=later).update(run_at=now + timedelta(hours=1), due_later=True)
    for status in Status.values:
        if status != Status.QUEUED:
            _rows(drv).filter(pk=_insert(drv).pk).update(status=status)
    due = _rows(drv).filter(drv.due(now + timedelta(seconds=1))).values_list("pk", flat=True)
    assert sorted(due) == [plain, keyed, unpromoted]


@conformance
def test_metrics_snapshot__runs_the_reads_inside_it(drv):
    _insert(drv)
    with drv.metrics_snapshot(5_000):
        assert _rows(drv).count() == 1
        assert connections[drv.alias].in_atomic_block == (drv.vendor != "sqlite")


# --- workflows -------------------------------------------------------------------------------


def _step_row(
    position: int, *, pending: int = 0, key: str | None = None, delay: float | None = None
) -> StepRow:
    status = WorkflowStep.Status.RELEASED if pending == 0 else WorkflowStep.Status.WAITING
    return StepRow(
        position, f"s{position}", "test.keyed" if key else "test.noop", "default", 0,
        json.dumps({"thing_id": key} if key else {"n": position}), key, 3, delay, "", status, pending, 0,
    )  # fmt: skip


def _workflow(
    drv: Driver, rows: list[StepRow], edges: list[tuple[int, int]], traceparent: str | None = None
) -> list[int]:
    """A workflow of ``rows``; ``edges`` between positions in ``rows`` (0-based)."""
    workflow = Workflow.objects.create(
        name="conformance", steps=len(rows), unfinished=len(rows), traceparent=traceparent
    )
    ids = drv.insert_steps(workflow.pk, rows, None)
    drv.insert_edges([(ids[up], ids[down]) for up, down in edges])
    return ids


@conformance
def test_insert_steps__returns_the_ids_in_the_rows_order_and_edges_link_them(drv):
    ids = _workflow(
        drv, [_step_row(n, pending=1 if n else 0) for n in range(5)], [(0, n) for n in range(1, 5)]
    )
    rows = {row.pk: row for row in WorkflowStep.objects.filter(pk__in=ids)}
    assert [rows[step_id].position for step_id in ids] == [0, 1, 2, 3, 4]
    assert rows[ids[0]].payload == {"n": 0}
    assert set(WorkflowEdge.objects.values_list("upstream_id", "downstream_id")) == {
        (ids[0], i) for i in ids[1:]
    }


@conformance
def test_release_workflow__inserts_the_released_steps_jobs_once_skipping_a_held_key(drv):
    _insert(drv, type="test.keyed", payload={"thing_id": 7}, dedupe_key="thing:7")
    rows = [_step_row(0), _step_row(1, key="thing:7"), _step_row(2, pending=1), _step_row(3, delay=3600)]
    ids = _workflow(drv, rows, [(0, 2)])

    assert drv.release_workflow(WorkflowStep.objects.get(pk=ids[0]).workflow_id) == 2
    jobs = {job.step_id: job for job in Job.objects.filter(step_id__isnull=False)}
    assert set(jobs) == {ids[0], ids[3]}  # the held key's step waits; the waiting one too
    assert jobs[ids[3]].run_at > timezone.now() + timedelta(minutes=59)  # its delay
    assert drv.release_steps([ids[0], ids[1]]) == 0  # a step's job once; the key still held
    Job.objects.filter(dedupe_key="thing:7", step__isnull=True).update(status=Status.SUCCEEDED)
    assert drv.release_steps([ids[1]]) == 1


@conformance
def test_release_successors__counts_down_and_releases_those_at_zero_in_fixed_statements(drv):
    # 0 → 1; 0 → 2; 3 → 2 (2 waits for two); 1 → 4
    rows = [
        _step_row(0),
        _step_row(1, pending=1),
        _step_row(2, pending=2),
        _step_row(3),
        _step_row(4, pending=1),
    ]
    ids = _workflow(drv, rows, [(0, 1), (0, 2), (3, 2), (1, 4)])
    with transaction.atomic(), CaptureQueriesContext(connections[drv.alias]) as queries:
        assert drv.release_successors(ids[0]) == 1
    statuses = dict(WorkflowStep.objects.filter(pk__in=ids).values_list("pk", "status"))
    pending = dict(WorkflowStep.objects.filter(pk__in=ids).values_list("pk", "pending"))
    assert (statuses[ids[1]], pending[ids[1]]) == ("released", 0)
    assert (statuses[ids[2]], pending[ids[2]]) == ("waiting", 1)
    assert Job.objects.filter(step_id=ids[1]).count() == 1
    assert drv.release_successors(ids[3]) == 1
    assert Job.objects.filter(step_id=ids[2]).count() == 1
    if drv.vendor != "sqlite":  # the ORM's portable path reads the steps before it inserts
        assert len(queries) <= 2


@conformance
def test_every_release__copies_the_workflows_trace_context_into_its_jobs(drv):
    # Two workflows side by side, 0 → 1 each: one started in a span, one in none.
    parent = "00-" + "a1" * 16 + "-" + "b2" * 8 + "-01"
    traced = _workflow(
        drv, [_step_row(0), _step_row(1, pending=1), _step_row(2, key="thing:7")], [(0, 1)], parent
    )
    plain = _workflow(drv, [_step_row(0), _step_row(1, pending=1)], [(0, 1)])
    _insert(drv, type="test.keyed", payload={"thing_id": 7}, dedupe_key="thing:7")

    for ids in (traced, plain):
        drv.release_workflow(WorkflowStep.objects.get(pk=ids[0]).workflow_id)
        drv.release_successors(ids[0])
    Job.objects.filter(dedupe_key="thing:7", step__isnull=True).update(status=Status.SUCCEEDED)
    assert drv.release_steps([traced[2]]) == 1  # the held key's step, released later

    carried = dict(Job.objects.filter(step__isnull=False).values_list("step_id", "traceparent"))
    assert carried == {
        traced[0]: parent,
        traced[1]: parent,
        traced[2]: parent,
        plain[0]: None,
        plain[1]: None,
    }


@conformance
def test_every_release__copies_the_steps_limit_keys_into_its_jobs(drv):
    # 0 → 1, and 2 held by its dedupe key: each verb that releases a step inserts its job.
    keys = {"concurrency_key": "account:1", "rate_key": "host:example.org"}
    rows = [
        _step_row(0)._replace(**keys),
        _step_row(1, pending=1)._replace(**keys),
        _step_row(2, key="thing:7")._replace(concurrency_key="account:2"),
    ]
    ids = _workflow(drv, rows, [(0, 1)])
    _insert(drv, type="test.keyed", payload={"thing_id": 7}, dedupe_key="thing:7")

    drv.release_workflow(WorkflowStep.objects.get(pk=ids[0]).workflow_id)
    drv.release_successors(ids[0])
    Job.objects.filter(dedupe_key="thing:7", step__isnull=True).update(status=Status.SUCCEEDED)
    assert drv.release_steps([ids[2]]) == 1

    carried = {
        step_id: (concurrency_key, rate_key)
        for step_id, concurrency_key, rate_key in Job.objects.filter(step__isnull=False).values_list(
            "step_id", "concurrency_key", "rate_key"
        )
    }
    assert carried == {
        ids[0]: ("account:1", "host:example.org"),
        ids[1]: ("account:1", "host:example.org"),
        ids[2]: ("account:2", None),
    }


@conformance
def test_cancel_below_and_restore_below__reach_every_waiting_step_however_far(drv):
    # 0 → 1 → 2 → 3, and 4 beside them
    rows = [_step_row(0), *(_step_row(n, pending=1) for n in (1, 2, 3)), _step_row(4)]
    ids = _workflow(drv, rows, [(0, 1), (1, 2), (2, 3)])

    assert drv.cancel_below([ids[0]], "Upstream step #0 failed.") == 3
    cancelled = WorkflowStep.objects.filter(status=WorkflowStep.Status.CANCELLED)
    assert set(cancelled.values_list("pk", flat=True)) == set(ids[1:4])
    assert set(cancelled.values_list("message", flat=True)) == {"Upstream step #0 failed."}
    assert drv.restore_below(ids[1]) == 2  # only what lies below the step given
    assert WorkflowStep.objects.get(pk=ids[1]).status == WorkflowStep.Status.CANCELLED
    assert WorkflowStep.objects.get(pk=ids[3]).status == WorkflowStep.Status.WAITING
