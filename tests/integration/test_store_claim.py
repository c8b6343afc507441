"""Claiming on the real database (PostgreSQL or MariaDB): order, queues, due time, SKIP LOCKED between two sessions,
and the plan the claim query gets with many finished jobs in the table."""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from jobs import store
from jobs.drivers import mariadb, postgres
from jobs.drivers.read_positions import Position
from jobs.models import Job, Status
from tests.support.database import on_mariadb, other_collation, plan_tables

pytestmark = pytest.mark.django_db(transaction=True)


def _claim_ids(worker: str, queues: list[str], limit: int) -> list[int]:
    return [job.id for job in store.claim(worker, queues, limit)]


def _ordered_jobs() -> list[int]:
    """Jobs enqueued out of order; returns their ids in the order they must be claimed."""
    base = timezone.now() - timedelta(minutes=10)
    low = store.enqueue("test.noop", {"n": "low"}, priority="low", run_at=base)
    normal_late = store.enqueue("test.noop", {"n": "normal late"}, run_at=base + timedelta(minutes=2))
    normal_a = store.enqueue("test.noop", {"n": "normal a"}, run_at=base + timedelta(minutes=1))
    normal_b = store.enqueue("test.noop", {"n": "normal b"}, run_at=base + timedelta(minutes=1))
    high = store.enqueue("test.noop", {"n": "high"}, priority="high", run_at=base + timedelta(minutes=5))
    critical = store.enqueue(
        "test.noop", {"n": "critical"}, priority="critical", run_at=base + timedelta(minutes=9)
    )
    return [critical.pk, high.pk, normal_a.pk, normal_b.pk, normal_late.pk, low.pk]


def test_claim__one_at_a_time_follows_priority_then_run_at_then_id():
    expected = _ordered_jobs()
    claimed = [_claim_ids("w1", ["default"], 1) for _ in expected]
    assert claimed == [[job_id] for job_id in expected]
    assert _claim_ids("w1", ["default"], 1) == []


def test_claim__a_batch_comes_back_in_claim_order():
    expected = _ordered_jobs()
    assert _claim_ids("w1", ["default"], len(expected)) == expected


def test_claim__fifo_within_a_priority():
    ids = [store.enqueue("test.noop", {"n": n}).pk for n in range(5)]
    assert [_claim_ids("w1", ["default"], 1)[0] for _ in ids] == ids


def test_claim__marks_the_job_running_under_the_worker_and_names_its_queue():
    job = store.enqueue("test.noop", {"n": 1})
    [claimed] = store.claim("w1", ["default"], 5)
    assert claimed == store.ClaimedJob(job.pk, "test.noop", '{"n": 1}', 1, 3, "default")
    job.refresh_from_db()
    assert (job.status, job.locked_by, job.attempts) == (Status.RUNNING, "w1", 1)
    assert job.started_at is not None and job.heartbeat_at is not None


def test_claim__leaves_future_jobs_and_other_queues_alone():
    store.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(minutes=1))
    ai = store.enqueue("test.ai", {})
    assert _claim_ids("w1", ["default"], 10) == []
    assert _claim_ids("w1", ["default", "ai"], 10) == [ai.pk]


def test_claim__respects_the_limit():
    store.enqueue_many("test.noop", [{} for _ in range(5)])
    assert len(store.claim("w1", ["default"], 3)) == 3
    assert len(store.claim("w2", ["default"], 3)) == 2
    assert store.claim("w3", ["default"], 0) == []
    assert store.claim("w3", [], 5) == []


def test_claim__skips_rows_locked_by_another_worker(other_connection: psycopg.Connection):
    first = store.enqueue("test.noop", {"n": 1})
    second = store.enqueue("test.noop", {"n": 2})
    # The other session holds the first row in an open transaction (mid-claim).
    locked = other_connection.execute(
        "SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [first.pk]
    ).fetchone()
    assert locked == (first.pk,)

    assert _claim_ids("w1", ["default"], 2) == [second.pk]  # did not wait, did not take it
    assert Job.objects.get(pk=first.pk).status == Status.QUEUED

    other_connection.rollback()
    assert _claim_ids("w1", ["default"], 2) == [first.pk]


def test_claim__two_sessions_claiming_at_once_never_share_a_job():
    """Another worker's claim stays uncommitted while ours runs: ours skips its rows."""
    store.enqueue_many("test.noop", [{"n": n} for n in range(10)])
    claimed_theirs, commit = threading.Event(), threading.Event()
    theirs: list[int] = []

    def other_worker() -> None:
        try:
            with transaction.atomic():
                theirs.extend(_claim_ids("other", ["default"], 4))
                claimed_theirs.set()
                commit.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_worker, daemon=True)
    thread.start()
    assert claimed_theirs.wait(10)
    ours = _claim_ids("w1", ["default"], 10)
    commit.set()
    thread.join(10)
    assert len(theirs) == 4 and len(ours) == 6
    assert not set(theirs) & set(ours)
    assert Job.objects.filter(status=Status.RUNNING, locked_by="other").count() == 4


def _finished_and_later_jobs(count: int) -> None:
    """``count`` succeeded jobs and ``count`` high-priority jobs due tomorrow (first in claim
    order, were they claimable), each kind written in one statement."""
    numbers = f"seq_1_to_{count}" if on_mariadb() else f"generate_series(1, {count})"
    tomorrow = "now() + INTERVAL 1 DAY" if on_mariadb() else "now() + interval '1 day'"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, created_at,
                                  finished_at, attempts, max_attempts, progress_message, error, message)
            SELECT 'test.noop', 'default', 0, 'succeeded', '{{}}', now(), now(), now(), 1, 1, '', '', ''
              FROM {numbers}
            """
        )
        cursor.execute(
            f"""
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, due_later, created_at,
                                  attempts, max_attempts, progress_message, error, message)
            SELECT 'test.noop', 'default', -50, 'queued', '{{}}', {tomorrow}, true, now(), 0, 1, '', '', ''
              FROM {numbers}
            """
        )


@pytest.mark.parametrize(
    "queues", [["default"], ["default", "ai"]], ids=["one-queue lane", "several-queue lane"]
)
def test_claim__plan_reads_the_claim_index_with_many_finished_jobs_and_jobs_due_later(queues):
    """20,000 finished jobs, 20,000 due tomorrow and 5 queued: the claim reads its index
    (``jobs_claim`` for one queue, ``jobs_claim_any`` for several) from its first ready
    entry, never the table, and stops after its few rows."""
    _finished_and_later_jobs(20_000)
    store.enqueue_many("test.noop", [{} for _ in range(5)])
    if on_mariadb():
        _assert_mariadb_claim_plan(queues)
        return
    statement, params = (
        (postgres.CLAIM_ONE_QUEUE, {"queue": queues[0]})
        if len(queues) == 1
        else (postgres.CLAIM_QUEUES, {"queues": queues})
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_job")
        cursor.execute("EXPLAIN " + statement, {"worker": "w1", "limit": 2, **params})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using jobs_claim" in plan, plan
    assert "(due_later = false)" in plan.split("Index Cond:")[1].splitlines()[0], plan
    assert "Seq Scan on jobs_job" not in plan, plan


def _assert_mariadb_claim_plan(queues: list[str]) -> None:
    """MariaDB's plan of the claim's locking read, from the head and on from a worker's last
    position: the claim index (led by ``claim_ready``), read in the claim's order (no
    filesort), with the ready rows' estimate, not the table's nor the jobs due later's."""
    if len(queues) == 1:
        statements, index = [mariadb.CLAIM_ONE_QUEUE, mariadb.CLAIM_ONE_QUEUE_AFTER], "jobs_claim"
    else:
        several = ", ".join(["%s"] * len(queues))
        statements = [
            mariadb.CLAIM_QUEUES.format(queues=several),
            mariadb.CLAIM_QUEUES_AFTER.format(queues=several),
        ]
        index = "jobs_claim_any"
    position = Position(0, datetime(2026, 1, 1), 1).params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE jobs_job")
        cursor.fetchall()
        for statement, params in zip(statements, [[], position], strict=True):
            cursor.execute("EXPLAIN FORMAT=JSON " + statement, [*queues, *params, 2])
            text = cursor.fetchone()[0]
            (table,) = plan_tables(json.loads(text))
            assert table["key"] == index, text
            assert table["access_type"] in ("ref", "range"), text
            assert table["rows"] < 1_000, text  # the five ready rows' entries, not 20,000 or 40,000
            assert "filesort" not in text, text


@pytest.mark.skipif(not on_mariadb(), reason="a MariaDB session's collation")
def test_claim__mariadb_reads_the_claim_index_in_order_when_the_sessions_collation_is_not_the_tables():
    """A session whose collation is not the tables' (a project's ``collation`` option other
    than the database's): a literal compared with a column then does not count as fixing
    it, and a claim whose ORDER BY named the columns its WHERE fixes sorted every ready row
    instead of reading its index in order. Every claim's locking read (the plain claim's and
    flow control's, of one queue and of several) still reads in index order."""
    _finished_and_later_jobs(2_000)
    store.enqueue_many("test.noop", [{} for _ in range(50)])
    several = "%s, %s"
    candidates = {"columns": "id", "excluded": ""}
    position = Position(0, datetime(2026, 1, 1), 25).params()
    reads = {
        "claim, one queue": (mariadb.CLAIM_ONE_QUEUE, ["default", 2]),
        "claim, several": (mariadb.CLAIM_QUEUES.format(queues=several), ["default", "ai", 2]),
        # On from a worker's last position, and the jobs up to it (``read_positions``).
        "claim on, one queue": (mariadb.CLAIM_ONE_QUEUE_AFTER, ["default", *position, 2]),
        "claim on, several": (
            mariadb.CLAIM_QUEUES_AFTER.format(queues=several),
            ["default", "ai", *position, 2],
        ),
        "claim ahead, one queue": (mariadb.CLAIM_ONE_QUEUE_UP_TO, ["default", *position, 2]),
        "claim ahead, several": (
            mariadb.CLAIM_QUEUES_UP_TO.format(queues=several),
            ["default", "ai", *position, 2],
        ),
        # A queue with limits of its own: each of the two reads its candidates are merged from.
        "flow, one queue": (mariadb.FLOW_CANDIDATES_PLAIN_ONE_QUEUE.format(**candidates), ["default", 2]),
        "flow, several": (
            mariadb.FLOW_CANDIDATES_PLAIN_QUEUES.format(queues=several, **candidates),
            ["default", "ai", 2],
        ),
        "flow keyed, one queue": mariadb.flow_candidates_statement(["default"], 2, [], [], keyed_only=True),
        "flow keyed, several": mariadb.flow_candidates_statement(
            ["default", "ai"], 2, [], [], keyed_only=True
        ),
    }
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE jobs_job")
        cursor.fetchall()
    with other_collation() as (_, other), connection.cursor() as cursor:
        sorted_reads = []
        for name, (statement, params) in reads.items():
            cursor.execute("EXPLAIN FORMAT=JSON " + statement, params)
            if "filesort" in cursor.fetchone()[0]:
                sorted_reads.append(name)
    assert not sorted_reads, f"sorted instead of read in index order under {other}: {sorted_reads}"


def _generated(job_id: int) -> tuple[int | None, str | None]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT claim_ready, running_key FROM jobs_job WHERE id = %s", [job_id])
        return cursor.fetchone()


@pytest.mark.skipif(
    not on_mariadb(), reason="MariaDB's generated columns that lead its claim and running-key indexes"
)
def test_claim__mariadbs_index_columns_hold_a_value_only_in_the_state_their_index_serves():
    """``claim_ready`` is 1 only while a job without limit keys is queued and due (a keyed
    job is in the keyed indexes alone), ``running_key`` its concurrency key only while it
    runs, and only a per-key one (a type-wide key's running jobs are counted from the
    running rows): the claim indexes and ``jobs_running_key`` find exactly those jobs, and
    an acknowledgement leaves both NULL (their entries stay put)."""
    later = store.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=1))
    keyed = store.enqueue("test.flow_key", {"account": "a"})
    assert _generated(later.pk) == (None, None)  # due later: not in the claim's range
    assert _generated(keyed.pk) == (None, None)  # keyed: jobs_claim_keyed's, not the plain claim's

    claimed = store.claim_job("w1", keyed.pk)
    assert claimed is not None
    assert _generated(keyed.pk) == (None, "account:a")
    assert store.complete("w1", [(claimed.id, claimed.attempt)]) == [keyed.pk]
    assert _generated(keyed.pk) == (None, None)
    typed = store.enqueue("test.flow_type", {})
    assert store.claim_job("w1", typed.pk) is not None
    assert _generated(typed.pk) == (None, None)  # "type:test.flow_type": not in the index

    Job.objects.filter(pk=later.pk).update(run_at=timezone.now() - timedelta(seconds=1))
    store.promote_due()
    assert _generated(later.pk) == (1, None)
    assert _claim_ids("w1", ["default"], 5) == [later.pk]


#: The array parameters of ``FLOW_TAKE_SPARED`` beside the candidates' (their values do not
#: change its plan).
SPARED_ARRAYS = ("gates", "bases", "types", "concurrency_keys", "rate_keys")

BACKLOGS = {
    "per-key backlog": ("test.flow_key", lambda n: {"account": n % 50}),
    # One key for every job (a type-wide limit): its generic estimate once said no row.
    "type-wide backlog": ("test.noop_limited", lambda n: {}),
}


@pytest.mark.parametrize("backlog", list(BACKLOGS))
@pytest.mark.parametrize(
    "queues", [["default"], ["default", "ai"]], ids=["one-queue lane", "several-queue lane"]
)
def test_flow_candidates__plan_reads_the_keyed_jobs_in_claim_order_however_many_wait(queues, backlog):
    """5,000 queued jobs with limit keys: the flow-controlled claim's candidates of a lane
    (its keyed jobs, ``keyed_only``) come from the front of ``jobs_claim_keyed`` (one queue;
    PostgreSQL may also read the next one) or ``jobs_claim_keyed_any`` (several), in claim
    order: nothing is sorted, so the claim
    costs the same whatever the keyed backlog. On PostgreSQL the plan checked is the generic
    one under a round's own settings (``postgres.ROUND_SETTINGS``), as a claim's round
    runs it."""
    type_name, payload = BACKLOGS[backlog]
    store.enqueue_many(type_name, [payload(n) for n in range(5_000)])
    index = "jobs_claim_keyed" if len(queues) == 1 else "jobs_claim_keyed_any"
    if on_mariadb():
        statement, params = mariadb.flow_candidates_statement(queues, 2, [], [], keyed_only=True)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE TABLE jobs_job")
            cursor.fetchall()
            cursor.execute("EXPLAIN FORMAT=JSON " + statement, params)
            text = cursor.fetchone()[0]
        (table,) = plan_tables(json.loads(text))
        assert table["key"] == index, text
        assert "filesort" not in text, text
        return
    kinds = {"queue": "text", "queues": "varchar[]", "limit": "int", "full": "text[]", "waiting": "text[]"}
    kinds |= {"periods": "int[]", **{name: "text[]" for name in SPARED_ARRAYS}}
    values = {
        "worker": "'w1'",
        "queue": "'default'",
        "queues": "ARRAY['default', 'ai']",
        "limit": "2",
        "full": "'{}'",
        "waiting": "'{}'",
        "periods": "ARRAY[1]",
        **{name: f"ARRAY['type:{type_name}']" for name in SPARED_ARRAYS},
    }
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_job")
    for name, statement in {
        "candidates": postgres.FLOW_CANDIDATES[True, len(queues) == 1],
        "take": postgres.FLOW_TAKE[True, len(queues) == 1],  # the candidates, marked running at once
        "spared": postgres.FLOW_TAKE_SPARED[True, len(queues) == 1],  # the same within the spares
    }.items():
        plan = _round_plan(statement, kinds, values)
        # Either keyed index serves one queue in claim order (the planner weighs them);
        # several queues only the one across queues.
        assert re.search(rf"Index Scan using ({index}|jobs_claim_keyed_any) on jobs_job", plan), (name, plan)
        assert "Seq Scan on jobs_job" not in plan, (name, plan)
        # The round's plans are priced high where a sort cannot be avoided (the take's of
        # its few rows): never compiled for it (JIT once cost 200 ms a take).
        assert "JIT" not in plan, (name, plan)
        if name == "candidates":
            assert "Sort" not in plan, plan


def _round_plan(statement: str, kinds: dict[str, str], values: dict[str, str]) -> str:
    """The generic plan of ``statement`` (a flow round's) under the round's settings."""
    names: list[str] = []
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${_number(names, m.group(1))}", statement)
    with connection.cursor() as cursor:
        cursor.execute(
            f"PREPARE round_statement ({', '.join(kinds.get(name, 'text') for name in names)}) AS {numbered}"
        )
        try:
            with transaction.atomic():  # the round's settings are its transaction's
                cursor.execute(postgres.ROUND_SETTINGS_SQL)
                cursor.execute(
                    f"EXPLAIN EXECUTE round_statement ({', '.join(values[name] for name in names)})"
                )
                return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE round_statement")


LEASED = {
    "lease_type": "test.noop_limited",  # type-wide limits: its rows store its own keys
    "lease_concurrency_key": "type:test.noop_limited",
    "lease_rate_key": "type:test.noop_limited",
}


@pytest.mark.parametrize(
    "queues", [["default"], ["default", "ai"]], ids=["one-queue lane", "several-queue lane"]
)
def test_leased_claim__plan_reads_the_keyed_jobs_when_the_statistics_say_the_type_is_rare(queues):
    """20,000 finished plain jobs beside 300 queued of a leased type, statistics taken then
    (the type, and jobs with keys, rare in them): the claim under a lease
    (``jobs.flow.leases``) reads a claim index, never the table. On PostgreSQL, with
    the estimate of a rare type and nothing to tie the claim to the keyed index, it scanned
    and sorted the whole table at every leased claim (4,300 jobs/s where the plain claim
    drains 35,000). Both the custom plan and the generic one (a prepared claim's) checked."""
    _finished_and_later_jobs(20_000)
    store.enqueue_many("test.noop_limited", [{} for _ in range(300)])
    index = "jobs_claim_keyed" if len(queues) == 1 else "jobs_claim_keyed_any"
    until = timezone.now() + timedelta(hours=1)
    if on_mariadb():
        one = len(queues) == 1
        template = mariadb.CLAIM_ONE_QUEUE_LEASED if one else mariadb.CLAIM_QUEUES_LEASED
        statement = template.format(queues=", ".join(["%s"] * len(queues)))
        lease = [*LEASED.values(), until.astimezone(UTC).replace(tzinfo=None)]
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE TABLE jobs_job")
            cursor.fetchall()
            cursor.execute("EXPLAIN FORMAT=JSON " + statement, [*queues, *lease, 2])
            text = cursor.fetchone()[0]
        (table,) = plan_tables(json.loads(text))
        assert table["key"] == index, text
        assert "filesort" not in text, text
        return
    statement = postgres.CLAIMS[len(queues) == 1, "leased", False]
    params = {
        "worker": "w1",
        "queue": queues[0],
        "queues": queues,
        "limit": 2,
        **LEASED,
        "lease_until": until,
    }
    names: list[str] = []
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${_number(names, m.group(1))}", statement)
    kinds = {"queue": "text", "queues": "varchar[]", "limit": "int", "lease_until": "timestamptz"}
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_job")
        cursor.execute("EXPLAIN " + statement, params)
        plans = {"custom": "\n".join(row[0] for row in cursor.fetchall())}
        cursor.execute(
            f"PREPARE leased ({', '.join(kinds.get(name, 'text') for name in names)}) AS {numbered}"
        )
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        try:
            cursor.execute(
                f"EXPLAIN EXECUTE leased ({', '.join(['%s'] * len(names))})", [params[name] for name in names]
            )
            plans["generic"] = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET plan_cache_mode")
            cursor.execute("DEALLOCATE leased")
    for kind, plan in plans.items():
        assert "Seq Scan on jobs_job" not in plan, (kind, plan)
        # A claim index's entries (in claim order, or its few hundred gathered and sorted:
        # the planner weighs them), never the table's rows.
        scan = r"(Index Scan using|Bitmap Index Scan on) jobs_claim(_keyed)?(_any)? "
        assert re.search(scan, plan), (kind, plan)


def _number(names: list[str], name: str) -> int:
    if name not in names:
        names.append(name)
    return names.index(name) + 1
