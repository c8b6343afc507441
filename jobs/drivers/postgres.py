"""The PostgreSQL driver: the hot path's raw statements, notices, advisory locks, estimates.

Each statement of the hot path replaces two or three ORM round trips (select ids, update,
re-read) with a single one; ``bench/throughput.py`` measures the difference. The verbs
without SQL of their own here are the ORM's (``jobs.drivers.orm``).

psycopg is imported only when a statement is prepared, so this module (which the
migrations read for the trigger) imports on any database.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q
from django.db.models.expressions import RawSQL

from jobs.conf import jobs_settings
from jobs.drivers.orm import OrmDriver, try_row
from jobs.drivers.protocol import (
    KEYED_JOBS_NOTICE,
    PLAIN_JOBS_NOTICE,
    Batch,
    Candidate,
    ClaimedJob,
    Done,
    FlowTransaction,
    GateSave,
    Leased,
    Locks,
    Promoted,
    Running,
    SparedPlan,
    StepRow,
    Taken,
    TaskRow,
    TaskTryRow,
)
from jobs.flow.limits import QUEUE_PREFIX, TYPE_PREFIX, split_type_keys
from jobs.flow.rates import GRAIN, MICROS, with_pending
from jobs.models import Job

CHANNEL = "jobs"

# --- worker sessions ---

# The worker's wake-up connection (``jobs.worker.listener``) subscribes to the channel the
# enqueue trigger notifies, in autocommit, and then only waits: it holds no lock and no
# transaction. Its session shows this text in pg_stat_activity, which is how the
# benchmarks see that a worker is up.
LISTEN = f"LISTEN {CHANNEL}"

# The supervisor's own session commits without waiting for the WAL flush. It only moves
# claimed jobs between states (claim, acknowledge, fail, release, heartbeat). If
# PostgreSQL crashed before flushing such a commit, the job would be found running and
# reaped, i.e. run again: never lost. Enqueues and the handlers' own writes (in the child
# processes) stay synchronous. ``JOBS_WORKER_ASYNC_COMMIT=false`` turns this off.
SUPERVISOR_ASYNC_COMMIT = "SET synchronous_commit TO off"

# Whether autovacuum looks after jobs_job: on for the server (it needs track_counts), and
# not turned off for the table by its storage parameter. Without it the finished jobs'
# dead rows stay and the statistics go stale: with none yet, or with a type or queue rare
# in them, PostgreSQL may plan a claim as a scan of the whole table.
AUTOVACUUM_OFF = """
SELECT current_setting('autovacuum') <> 'on' OR current_setting('track_counts') <> 'on',
       EXISTS (SELECT 1 FROM pg_class AS c, unnest(c.reloptions) AS o
                WHERE c.oid = 'jobs_job'::regclass AND o ~* '^autovacuum_enabled=(false|off|no|0)$')
"""

# Locks up to %(limit)s due, queued rows of the worker's queues in claim order, skipping
# rows another worker holds, and marks them running under this worker in the same
# statement, so the lock lives only as long as this one UPDATE. A one-queue lane is served
# by the partial index ``jobs_claim`` (queue, due_later, priority, run_at, id), a lane of
# several queues by ``jobs_claim_any`` (due_later, priority, run_at, id); both are read in
# order from the first job not due later, so the cost grows neither with the backlog nor
# with the jobs waiting for a later time (those stay under due_later = true until a worker
# promotes them, ``PROMOTE``). The ids are gathered into
# an array first (an InitPlan), so even the generic plan of the prepared statement reaches
# the rows through the primary key rather than joining against the whole table. The
# payload goes out as text: the child process parses it. Each row's queue goes out too: a
# lane's fair share counts its running and buffered jobs by it. RETURNING has no order of
# its own, so the outer SELECT hands the batch out in claim order.
# The ``_UNKEYED`` forms serve a queue that also holds jobs with flow limits: they take
# only the jobs without limit keys, passing over the keyed ones (claimed through flow
# control, ``FLOW_CANDIDATES_KEYED_*``) as they read the same index.
_CLAIM = """
WITH claimed AS (
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %(worker)s,
       started_at = now(), heartbeat_at = now(), finished_at = NULL,
       progress = NULL, progress_message = ''
 WHERE id = ANY(ARRAY(
        SELECT id FROM jobs_job
         WHERE status = 'queued' AND {queue_condition} AND due_later = false AND run_at <= now(){keys_condition}
         ORDER BY priority, run_at, id
         LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED))
RETURNING id, type, payload::text AS payload, attempts, max_attempts, queue, step_id, priority, run_at{returning}
)
SELECT c.id, c.type, c.payload, c.attempts, c.max_attempts, c.queue, c.step_id{columns}
  FROM claimed AS c{join}
 ORDER BY c.priority, c.run_at, c.id
"""
_ONE_QUEUE = "queue = %(queue)s"
_QUEUES = "queue = ANY(%(queues)s::varchar[])"
_UNKEYED = "\n           AND concurrency_key IS NULL AND rate_key IS NULL"
# What a django.tasks task's try reads of its row beyond its claim's own fields
# (``TaskTryRow`` without id and queue; ``ClaimedJob.try_fields``), from the row ``{row}``.
# Times go out as microseconds since the epoch, exact integers: Django's loader of
# ``timestamptz`` text costs a microsecond a value, a third of the read.
_TRY_FIELDS = """{row}.priority, (extract(epoch FROM {row}.run_at) * 1000000)::bigint AS run_at,
       (extract(epoch FROM {row}.created_at) * 1000000)::bigint AS created_at,
       (extract(epoch FROM {row}.started_at) * 1000000)::bigint AS started_at,
       EXISTS (SELECT 1 FROM jobs_attempt AS a WHERE a.job_id = {row}.id) AS tried"""
# The claim that also brings, for the jobs of the types in %(row_types)s (django.tasks
# tasks), what their tries would read of their rows (``ClaimedJob.try_fields``, the
# fields of ``TASK_TRY_ROWS``): the UPDATE holds the row already, and the child reads
# nothing. The other jobs get NULLs.
_PLAIN = {"returning": "", "columns": "", "join": ""}
_WITH_ROWS = {
    "returning": ", created_at, started_at",
    "columns": ", t.priority, t.run_at, t.created_at, t.started_at, t.tried",
    "join": f""" LEFT JOIN LATERAL (
       SELECT {_TRY_FIELDS.format(row="c")}
        WHERE c.type = ANY(%(row_types)s::text[])) AS t ON true""",
}
# A claim under a lease (``jobs.flow.leases``): the lease's type storing its keys, and only
# before its end (by the statement's clock, which also stamps the jobs' start). Leased jobs
# carry keys, so it also names the keyed indexes' condition: PostgreSQL then reads
# ``jobs_claim_keyed``/``_any`` (the queued keyed jobs alone) whatever its statistics say,
# where an estimate of a type rare in them (or none yet) made it scan and sort the table.
_LEASED = """
           AND (concurrency_key IS NOT NULL OR rate_key IS NOT NULL)
           AND type = %(lease_type)s AND concurrency_key IS NOT DISTINCT FROM %(lease_concurrency_key)s::text
           AND rate_key IS NOT DISTINCT FROM %(lease_rate_key)s::text AND now() < %(lease_until)s::timestamptz"""
_KEYS_CONDITIONS = {"": "", "unkeyed": _UNKEYED, "leased": _LEASED}
#: The plain claim in its forms, by (one queue, which keyed jobs: "", "unkeyed" or
#: "leased", with rows).
CLAIMS = {
    (one, keys, with_rows): _CLAIM.format(
        queue_condition=_ONE_QUEUE if one else _QUEUES,
        keys_condition=condition,
        **(_WITH_ROWS if with_rows else _PLAIN),
    )
    for one in (True, False)
    for keys, condition in _KEYS_CONDITIONS.items()
    for with_rows in (False, True)
}
CLAIM_ONE_QUEUE = CLAIMS[True, "", False]
CLAIM_QUEUES = CLAIMS[False, "", False]

# What an acknowledgement returns of each job it marked succeeded: what the rollup of
# finished tries counts it by (``jobs.rollup``), its wait (due to started) and its run, in
# seconds. Read from the row the UPDATE already holds: no statement of its own.
_DONE = (
    "j.id, j.queue, j.type, extract(epoch FROM j.started_at - j.run_at)::float8, "
    "extract(epoch FROM j.finished_at - j.started_at)::float8"
)

# Marks many jobs succeeded in one statement, fenced: a row counts only while it is still
# running under this worker and the same attempt (a reaped job's late result is dropped).
# Each id's attempt is looked up by its position in the array, not by joining an unnest:
# the generic plan of a join would compare every row with every pair.
_COMPLETE = """
UPDATE jobs_job AS j
   SET status = 'succeeded', finished_at = now(), progress = 100, error = ''
 WHERE j.id = ANY(%(ids)s::bigint[])
   AND j.attempts = (%(attempts)s::int[])[array_position(%(ids)s::bigint[], j.id)]
   AND j.status = 'running' AND j.locked_by = %(worker)s
RETURNING {returning}
"""

# COMPLETE for jobs that return a result (django.tasks tasks, ``jobs.backends``): the same
# fence and the same lookup by position, plus each job's result (JSON text) stored with it.
# Jobs without a result never take this statement, so the common acknowledgement above
# carries no result column at all.
_COMPLETE_WITH_RESULTS = """
UPDATE jobs_job AS j
   SET status = 'succeeded', finished_at = now(), progress = 100, error = '',
       result = ((%(results)s::text[])[array_position(%(ids)s::bigint[], j.id)])::jsonb
 WHERE j.id = ANY(%(ids)s::bigint[])
   AND j.attempts = (%(attempts)s::int[])[array_position(%(ids)s::bigint[], j.id)]
   AND j.status = 'running' AND j.locked_by = %(worker)s
RETURNING {returning}
"""

COMPLETE = _COMPLETE.format(returning=_DONE)
COMPLETE_WITH_RESULTS = _COMPLETE_WITH_RESULTS.format(returning=_DONE)

# The rows django.tasks tasks' results are built from (``jobs.task_results``): a worker's
# child reads those of a batch before running it, ``get_result`` reads one. Primary-key
# lookups, and whether each job has failed tries, an index-only probe of the foreign key's
# index on jobs_attempt(job_id). It reads committed rows and locks nothing. JSON goes out
# as text, parsed by the caller.
TASK_ROWS = """
SELECT j.id, j.type, j.queue, j.priority, j.status, j.payload::text, j.run_at, j.created_at,
       j.started_at, j.finished_at, j.locked_by, j.result::text,
       EXISTS (SELECT 1 FROM jobs_attempt AS a WHERE a.job_id = j.id) AS tried
  FROM jobs_job AS j
 WHERE j.id = ANY(%(ids)s::bigint[])
"""

# What the tries a worker's child is about to start read of their rows (``TaskTryRow``),
# where their claim did not bring it.
TASK_TRY_ROWS = f"""
SELECT j.id, j.queue, {_TRY_FIELDS.format(row="j")}
  FROM jobs_job AS j
 WHERE j.id = ANY(%(ids)s::bigint[])
"""

# --- flow control (``jobs.store.claim_flowed``): the claim of jobs with limits ---
#
# One round is a short transaction of two or three round trips (``_FlowRound``): BEGIN, the
# type and queue gates' locks the store expects and the counts under them, and the
# candidates; the per-key gates' locks and their counts (when the candidates have keys of
# their own); the update and COMMIT. Several statements go in one round trip as one text (Django's
# client-side binding sends them as one query; each statement still reads its own
# snapshot), so a claim under limits costs two or three round trips where the plain claim
# costs one.

# Its candidates: locks up to %(limit)s due, queued rows of the queues in claim order,
# skipping rows another worker holds and the jobs of keys known to be at their limit,
# until the claim's transaction ends (a few statements later). The ``_KEYED`` forms take
# only the jobs with a limit key (a queue whose other jobs keep the plain claim), the
# others serve a queue with limits of its own. Each is read in claim order from the front
# of an index, so its cost grows neither with the backlog nor with the keys' jobs: one
# queue by equality (``queue = ANY`` of an array would read every due row of the index and
# sort them), from ``jobs_claim_keyed`` (queue, priority, run_at, id) or ``jobs_claim``;
# several queues from ``jobs_claim_keyed_any`` (priority, run_at, id) or
# ``jobs_claim_any``, as the plain claim reads them. The keyed indexes hold nothing but
# queued keyed jobs not due later.
_FLOW_CANDIDATES = """
SELECT {columns} FROM jobs_job
 WHERE status = 'queued' AND {queue_condition} AND due_later = false AND run_at <= now(){keyed}
   AND (concurrency_key IS NULL OR concurrency_key <> ALL(%(full)s::text[]))
   AND (rate_key IS NULL OR rate_key <> ALL(%(waiting)s::text[]))
 ORDER BY priority, run_at, id
 LIMIT %(limit)s
   FOR UPDATE SKIP LOCKED"""
_CANDIDATE_COLUMNS = "id, type, queue, concurrency_key, rate_key"
_KEYED = "\n   AND (concurrency_key IS NOT NULL OR rate_key IS NOT NULL)"


def _flow_candidates(columns: str = _CANDIDATE_COLUMNS) -> dict[tuple[bool, bool], str]:
    """The candidates' statement in its four forms, by (keyed only, one queue)."""
    return {
        (keyed, one): _FLOW_CANDIDATES.format(
            columns=columns, queue_condition=_ONE_QUEUE if one else _QUEUES, keyed=_KEYED if keyed else ""
        )
        for keyed in (False, True)
        for one in (False, True)
    }


FLOW_CANDIDATES = _flow_candidates()

# A round that expects room for every job it takes (``FlowTransaction.take``): the
# candidates above marked running at once, as the plain claim marks its jobs (one
# statement, which locks and updates each row once), all started at one moment of the
# database's clock read after the gates' locks were granted (the decision's clock), each
# with its limit keys, for the store to admit afterwards. A job it should not have taken
# is never seen by anyone: the store then rolls the round back.
_FLOW_TAKE = """
WITH claimed AS (
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %(worker)s,
       started_at = clock.at, heartbeat_at = clock.at, finished_at = NULL,
       progress = NULL, progress_message = ''
  FROM (SELECT clock_timestamp() AS at) AS clock
 WHERE id = ANY(ARRAY({candidates}))
RETURNING id, type, payload::text AS payload, attempts, max_attempts, queue, step_id,
          concurrency_key, rate_key, priority, run_at,
          (extract(epoch FROM clock.at) * 1000000)::bigint AS at
)
SELECT id, type, payload, attempts, max_attempts, queue, step_id, concurrency_key, rate_key, at
  FROM claimed ORDER BY priority, run_at, id
"""
FLOW_TAKE = {form: _FLOW_TAKE.format(candidates=ids) for form, ids in _flow_candidates("id").items()}

# Under the gates' locks: the database's clock (µs since the epoch, read now, after the
# locks were granted, so every claim of these keys commits before it) and the running jobs
# of each concurrency key (an index-only probe of ``jobs_running_key``, whose condition the
# first part repeats word for word so that even a generic plan may read it), of each
# type-wide key, which that index leaves out (the running rows, through ``jobs_running``),
# and of each queue with a concurrency limit (the same). Those two read no row when they
# have nothing to count (``cardinality``: checked once, before the scan, even in a generic
# plan). Reads committed rows; locks nothing.
FLOW_RUNNING = f"""
SELECT 'key', concurrency_key, count(*) FROM jobs_job
 WHERE status = 'running' AND concurrency_key = ANY(%(keys)s::text[])
   AND NOT (concurrency_key LIKE '{TYPE_PREFIX}%%')
 GROUP BY concurrency_key
UNION ALL
SELECT 'key', concurrency_key, count(*) FROM jobs_job
 WHERE status = 'running' AND concurrency_key = ANY(%(type_keys)s::text[])
   AND cardinality(%(type_keys)s::text[]) > 0
 GROUP BY concurrency_key
UNION ALL
SELECT 'queue', queue, count(*) FROM jobs_job
 WHERE status = 'running' AND queue = ANY(%(counted)s::varchar[])
   AND cardinality(%(counted)s::varchar[]) > 0
 GROUP BY queue
UNION ALL
SELECT 'now', NULL, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
"""

# The gates of the candidates' limit keys, locked in key order until the claim's
# transaction ends: claims of the same keys wait here for each other (for those few
# milliseconds), claims of other keys do not. Through the primary key.
FLOW_LOCK_GATES = """
SELECT key, recent, spare_pending_at, spare_pending, leases FROM jobs_flow_gate
 WHERE key = ANY(%(gates)s::text[])
 ORDER BY key
   FOR UPDATE
"""

# What a round stores of the (locked) gates (``GateSave``: rate windows, spares): alone,
# the end of a round whose jobs were marked running as they were locked
# (``FlowTransaction.take``).
FLOW_SAVE_GATES = """
UPDATE jobs_flow_gate AS g
   SET recent = w.recent, spare_slots = w.slots, spare_starts = w.starts, spare_until = w.until,
       spare_basis = w.basis, spare_pending_at = NULL, spare_pending = NULL,
       leases = COALESCE(w.leases, g.leases)
  FROM unnest(%(gate_keys)s::text[], %(gate_recent)s::text[], %(gate_slots)s::int[],
              %(gate_starts)s::int[], %(gate_until)s::bigint[], %(gate_basis)s::text[],
              %(gate_leases)s::text[])
       AS w(key, recent, slots, starts, until, basis, leases)
 WHERE g.key = w.key"""

# The claim's end: the admitted candidates (locked by this transaction) marked running,
# started at the clock the decision was made at (or now, where no gate was read), through
# the primary key, and the rate windows saved, in one statement.
FLOW_MARK_CLAIMED = f"""
WITH saved AS ({FLOW_SAVE_GATES}
)
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %(worker)s,
       started_at = COALESCE(%(at)s::timestamptz, now()), heartbeat_at = COALESCE(%(at)s::timestamptz, now()),
       finished_at = NULL, progress = NULL, progress_message = ''
 WHERE id = ANY(%(ids)s::bigint[])
RETURNING id, type, payload::text AS payload, attempts, max_attempts, queue, step_id
"""

# A claim within the spares of its type and queue gates (``jobs.flow.spare``), in one
# statement: the gates locked in key order (claims of the same gates take turns here, for
# this statement only), the clock read once they are, the candidates locked as
# FLOW_CANDIDATES locks them; then, only if every candidate is of a kind the claim may take
# (its type, storing the keys in force) and every gate's spare is in force (reckoned for
# today's limits, not past its time) and covers the candidates that count against it, the
# candidates marked running at that clock and each gate's spare lowered by them, their
# starts recorded as ``Window.record`` records them: at the end of the 1/GRAIN-th of the
# period they fall in, added to the gate's *pending* pair (``spare_pending_at``,
# ``spare_pending``: two integers, not the window's JSON text) while the grain is the same;
# a claim of a later grain moves the pending pair into the window (``recent``), dropping
# the starts older than the period as ``Window.forget_before`` does. So the window's text
# is parsed and written once a grain, not at every claim, and stays short. Whatever reads
# a window reads it with its pending pair (``jobs.flow.rates.Window.load``). Its last
# row says whether it took them (``fine``); the others are the jobs taken. Nothing is held
# past the statement.
_FLOW_TAKE_SPARED = """
WITH gate AS (
SELECT g.key, g.recent, g.spare_slots, g.spare_starts, g.spare_until, g.spare_pending_at, g.spare_pending,
       g.spare_basis = (%(bases)s::text[])[array_position(%(gates)s::text[], g.key::text)] AS current,
       (%(periods)s::int[])[array_position(%(gates)s::text[], g.key::text)] AS period
  FROM jobs_flow_gate AS g
 WHERE g.key = ANY(%(gates)s::text[])
 ORDER BY g.key
   FOR UPDATE
), clock AS (
SELECT read.at, (extract(epoch FROM read.at) * 1000000)::bigint AS us
  FROM (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM gate) AS locked) AS read
), candidate AS ({candidates}
), need AS (
SELECT gate.key, gate.period,
       count(c.id) FILTER (WHERE c.concurrency_key = gate.key OR '{queue_prefix}' || c.queue = gate.key) AS slots,
       count(c.id) FILTER (WHERE c.rate_key = gate.key OR '{queue_prefix}' || c.queue = gate.key) AS starts,
       (clock.us + grain.size - 1) / grain.size * grain.size AS grain_at
  FROM gate LEFT JOIN candidate AS c ON true, clock,
       LATERAL (SELECT greatest(1, gate.period::bigint * {micros} / {grain}) AS size) AS grain
 GROUP BY gate.key, gate.period, clock.us, grain.size
), verdict AS (
SELECT (SELECT count(*) FROM gate) = cardinality(%(gates)s::text[])
   AND NOT EXISTS (
       SELECT FROM candidate AS c
         LEFT JOIN unnest(%(types)s::text[], %(concurrency_keys)s::text[], %(rate_keys)s::text[])
              AS k(type, concurrency_key, rate_key) ON k.type = c.type
        WHERE k.type IS NULL OR c.concurrency_key IS DISTINCT FROM k.concurrency_key
           OR c.rate_key IS DISTINCT FROM k.rate_key)
   AND NOT EXISTS (
       SELECT FROM gate JOIN need USING (key), clock
        WHERE NOT gate.current OR gate.spare_until <= clock.us
           OR gate.spare_slots < need.slots OR gate.spare_starts < need.starts) AS fine
), claimed AS (
UPDATE jobs_job AS j
   SET status = 'running', attempts = attempts + 1, locked_by = %(worker)s,
       started_at = clock.at, heartbeat_at = clock.at, finished_at = NULL,
       progress = NULL, progress_message = ''
  FROM clock, verdict
 WHERE verdict.fine AND j.id = ANY(ARRAY(SELECT id FROM candidate))
RETURNING j.id, j.type, j.payload::text AS payload, j.attempts, j.max_attempts, j.queue, j.step_id,
          j.priority, j.run_at
), counted AS (
SELECT need.key, need.starts > 0 AND need.period IS NOT NULL AS starts,
       gate.spare_pending_at IS NOT NULL AND gate.spare_pending_at <> need.grain_at AS moved
  FROM need JOIN gate USING (key)
), recorded AS (
SELECT need.key,
       (jsonb_path_query_array(COALESCE(NULLIF(gate.recent, '')::jsonb, '[]'::jsonb),
                               'strict $[*] ? (@[0] > $since)',
                               jsonb_build_object('since', clock.us - need.period::bigint * {micros}))
        || jsonb_build_array(jsonb_build_array(gate.spare_pending_at, gate.spare_pending)))::text AS recent
  FROM need JOIN gate USING (key) JOIN counted USING (key), clock
 WHERE counted.starts AND counted.moved
), spent AS (
UPDATE jobs_flow_gate AS g
   SET spare_slots = g.spare_slots - need.slots, spare_starts = g.spare_starts - need.starts,
       recent = COALESCE(recorded.recent, g.recent),
       spare_pending_at = CASE WHEN counted.starts THEN need.grain_at ELSE g.spare_pending_at END,
       spare_pending = CASE WHEN NOT counted.starts THEN g.spare_pending
                            WHEN counted.moved OR g.spare_pending IS NULL THEN need.starts
                            ELSE g.spare_pending + need.starts END
  FROM need JOIN counted USING (key) LEFT JOIN recorded USING (key), verdict
 WHERE verdict.fine AND g.key = ANY(%(gates)s::text[]) AND g.key = need.key AND (need.slots > 0 OR need.starts > 0)
)
SELECT id, type, payload, attempts, max_attempts, queue, step_id,
       row_number() OVER (ORDER BY priority, run_at, id), NULL::boolean
  FROM claimed
 UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, fine FROM verdict
"""


def _unindented(statement: str) -> str:
    """``statement`` without its lines' indentation: psycopg caches how it turns a
    statement's named parameters into PostgreSQL's numbered ones only for statements of at
    most 4,096 bytes, and parses a longer one again at every execution."""
    return "\n".join(line.strip() for line in statement.splitlines())


FLOW_TAKE_SPARED = {
    form: _unindented(
        _FLOW_TAKE_SPARED.format(candidates=candidates, queue_prefix=QUEUE_PREFIX, micros=MICROS, grain=GRAIN)
    )
    for form, candidates in FLOW_CANDIDATES.items()
}

# Limit keys for a job enqueued before its type declared a type-wide limit (rare).
FLOW_REKEY = "UPDATE jobs_job SET concurrency_key = %s, rate_key = %s WHERE id = %s"

# --- enqueue, notify and timers -------------------------------------------------------------

# Enqueue of one job. A duplicate active dedupe key inserts nothing and returns no row;
# the caller then looks up the job that holds the key. The conflict is found in the
# partial unique index ``jobs_dedupe_active`` (type, dedupe_key of queued and running
# rows). The statement locks only its new row; a twin holding the same key in a
# transaction not yet committed makes it wait for that transaction, so only one inserts.
INSERT_ONE = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, due_later,
                      attempts, max_attempts, progress_message, error, message, traceparent,
                      concurrency_key, rate_key)
VALUES (%(type)s, %(queue)s, %(priority)s, 'queued', %(payload)s::jsonb, %(dedupe_key)s,
        COALESCE(%(run_at)s::timestamptz, now()), %(due_later)s, 0, %(max_attempts)s, '', '', '',
        %(traceparent)s, %(concurrency_key)s, %(rate_key)s)
    ON CONFLICT (type, dedupe_key) WHERE status IN ('queued', 'running') AND dedupe_key IS NOT NULL
    DO NOTHING
RETURNING id, run_at, created_at
"""

# Bulk enqueue: one INSERT for a whole batch of payloads (given as JSON text). The partial
# unique index ``jobs_dedupe_active`` turns a duplicate active dedupe key into a no-op;
# like INSERT_ONE it locks only the rows it adds.
INSERT_MANY = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, due_later,
                      attempts, max_attempts, progress_message, error, message, traceparent)
SELECT %(type)s, %(queue)s, %(priority)s, 'queued', item.payload::jsonb, item.dedupe_key,
       COALESCE(%(run_at)s, now()), %(due_later)s, 0, %(max_attempts)s, '', '', '', %(traceparent)s
  FROM unnest(%(payloads)s::text[], %(dedupe_keys)s::text[]) AS item(payload, dedupe_key)
    ON CONFLICT (type, dedupe_key) WHERE status IN ('queued', 'running') AND dedupe_key IS NOT NULL
    DO NOTHING
"""
# INSERT_MANY for a type with flow limits (``jobs.flow``): each row with its limit keys too.
# A statement of its own, so the bulk enqueue of an unlimited type passes no empty arrays.
INSERT_MANY_LIMITED = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, due_later,
                      attempts, max_attempts, progress_message, error, message, traceparent,
                      concurrency_key, rate_key)
SELECT %(type)s, %(queue)s, %(priority)s, 'queued', item.payload::jsonb, item.dedupe_key,
       COALESCE(%(run_at)s, now()), %(due_later)s, 0, %(max_attempts)s, '', '', '', %(traceparent)s,
       item.concurrency_key, item.rate_key
  FROM unnest(%(payloads)s::text[], %(dedupe_keys)s::text[], %(concurrency_keys)s::text[],
              %(rate_keys)s::text[]) AS item(payload, dedupe_key, concurrency_key, rate_key)
    ON CONFLICT (type, dedupe_key) WHERE status IN ('queued', 'running') AND dedupe_key IS NOT NULL
    DO NOTHING
"""

# --- workflows (``jobs.workflow``) -----------------------------------------------------------

# A released step's job: the step's own values (checked when the workflow started), queued,
# due after its delay (due later, until a worker promotes it, when it has one), linked to its
# step, with its workflow's trace context (``jobs.tracing``; NULL when none, see below). The
# unique index ``jobs_step_job`` makes a second
# job of a step a no-op, and ``jobs_dedupe_active`` one whose dedupe key an active job holds
# (that step waits for the key: ``jobs.workflow.progress.release_blocked``). Like any
# enqueue, the trigger below wakes the workers of the queues that got due jobs.
_STEP_JOB = """{counted}
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, due_later,
                      attempts, max_attempts, progress_message, error, message, step_id,
                      traceparent, concurrency_key, rate_key)
SELECT s.type, s.queue, s.priority, 'queued', s.payload, s.dedupe_key,
       now() + make_interval(secs => COALESCE(s.delay, 0)), COALESCE(s.delay, 0) > 0,
       0, s.max_attempts, '', '', '', s.id,
       {traceparent}, s.concurrency_key, s.rate_key
  FROM {source} AS s
 WHERE {condition}
 ORDER BY s.id
    ON CONFLICT DO NOTHING
"""

# The trace context a released step's job carries, its workflow's: read by the workflow's
# primary key, once a statement where the statement's steps are of one workflow (its start, a
# step's successors), per step where they may not be (the steps' rows hold no copy).
WORKFLOW_TRACEPARENT = "(SELECT f.traceparent FROM jobs_workflow AS f WHERE f.id = %(workflow)s)"
SUCCESSORS_TRACEPARENT = """(SELECT f.traceparent FROM jobs_workflow AS f
         WHERE f.id = (SELECT u.workflow_id FROM jobs_workflow_step AS u WHERE u.id = %(step)s))"""
STEPS_TRACEPARENT = "(SELECT f.traceparent FROM jobs_workflow AS f WHERE f.id = s.workflow_id)"

# A workflow's steps (as it starts, or steps a running one adds): one INSERT of the arrays,
# whatever their number, returning each new row's id with its position. Locks only the
# new rows.
INSERT_STEPS = """
INSERT INTO jobs_workflow_step (workflow_id, position, name, type, queue, priority, payload,
                                dedupe_key, concurrency_key, rate_key, max_attempts, delay,
                                results_as, status, pending, depth, message, added_by)
SELECT %(workflow)s, s.position, s.name, s.type, s.queue, s.priority, s.payload::jsonb,
       s.dedupe_key, s.concurrency_key, s.rate_key, s.max_attempts, s.delay, s.results_as,
       s.status, s.pending, s.depth, '', %(added_by)s
  FROM unnest(%(position)s::int[], %(name)s::text[], %(type)s::text[], %(queue)s::text[],
              %(priority)s::int[], %(payload)s::text[], %(dedupe_key)s::text[],
              %(concurrency_key)s::text[], %(rate_key)s::text[],
              %(max_attempts)s::int[], %(delay)s::float8[], %(results_as)s::text[],
              %(status)s::text[], %(pending)s::int[], %(depth)s::int[])
       AS s(position, name, type, queue, priority, payload, dedupe_key, concurrency_key, rate_key,
            max_attempts, delay, results_as, status, pending, depth)
RETURNING id, position
"""

# The edges between them: one INSERT of two arrays. Locks only the new rows.
INSERT_EDGES = """
INSERT INTO jobs_workflow_edge (upstream_id, downstream_id)
SELECT * FROM unnest(%(upstream)s::bigint[], %(downstream)s::bigint[])
"""

# A starting workflow's first steps (inserted as released): its steps read through the
# index ``jobs_workflow_step_graph``, which leads with the workflow. Locks only the new rows.
RELEASE_WORKFLOW = _STEP_JOB.format(
    counted="",
    traceparent=WORKFLOW_TRACEPARENT,
    source="jobs_workflow_step",
    condition="s.workflow_id = %(workflow)s AND s.status = 'released'",
)

# Released steps whose job waited for its dedupe key, by primary key.
RELEASE_STEPS = _STEP_JOB.format(
    counted="",
    traceparent=STEPS_TRACEPARENT,
    source="jobs_workflow_step",
    condition="s.id = ANY(%(ids)s::bigint[]) AND s.status = 'released'",
)

# A step succeeded: one statement, whatever the number of its successors. The UPDATE counts
# down every step that waits for it (found by the edges' primary key, upstream first) and
# releases those that wait for nothing more; the INSERT adds the jobs of the released ones
# from the rows the UPDATE returns. Every assignment reads the row as it was. It locks the
# successors' rows (by primary key) and the new jobs until the step's transaction commits;
# the caller holds the workflow's row, so two upstream steps of one successor count down one
# after the other.
RELEASE_SUCCESSORS = _STEP_JOB.format(
    counted="""
WITH counted AS (
    UPDATE jobs_workflow_step AS w
       SET status = CASE WHEN w.pending = 1 AND w.status = 'waiting' THEN 'released' ELSE w.status END,
           pending = w.pending - 1
     WHERE w.id IN (SELECT e.downstream_id FROM jobs_workflow_edge AS e WHERE e.upstream_id = %(step)s)
    RETURNING w.*)""",
    traceparent=SUCCESSORS_TRACEPARENT,
    source="counted",
    condition="s.status = 'released' AND s.pending = 0",
)

# Enqueue wakes idle workers: a statement-level trigger sends one NOTIFY per queue that
# received due jobs, ``plain:<queue>`` when none of them has a limit key (a worker then
# skips the claim of keyed jobs, a transaction of gates), ``keyed:<queue>`` when all of
# them have one (it skips the plain claim, which would read past the keyed jobs waiting in
# a mixed queue to find none), else the queue's name. It reads
# only the statement's new rows (the transition table), so it needs no index and locks
# nothing. PostgreSQL delivers the notice at commit, so a rolled-back enqueue wakes no one.
CREATE_NOTIFY_TRIGGER = f"""
CREATE OR REPLACE FUNCTION jobs_notify_enqueued() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', CASE WHEN NOT keyed THEN '{PLAIN_JOBS_NOTICE}' || queue
                                        WHEN all_keyed THEN '{KEYED_JOBS_NOTICE}' || queue
                                        ELSE queue END)
       FROM (SELECT queue, bool_or(concurrency_key IS NOT NULL OR rate_key IS NOT NULL) AS keyed,
                    bool_and(concurrency_key IS NOT NULL OR rate_key IS NOT NULL) AS all_keyed
               FROM new_jobs
              WHERE status = 'queued' AND run_at <= now()
              GROUP BY queue) AS due;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS jobs_notify_enqueued ON jobs_job;
CREATE TRIGGER jobs_notify_enqueued
    AFTER INSERT ON jobs_job
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify_enqueued();
"""

DROP_NOTIFY_TRIGGER = """
DROP TRIGGER IF EXISTS jobs_notify_enqueued ON jobs_job;
DROP FUNCTION IF EXISTS jobs_notify_enqueued();
"""

# Wakes the idle workers of one queue (``jobs.store.notify``: a released, retried or reaped
# job; enqueue wakes them by the trigger above). Locks nothing and reads no table;
# PostgreSQL delivers the notice at commit, so a rolled-back change wakes no one.
NOTIFY = "SELECT pg_notify(%s, %s)"

# Promotes the jobs due later that are due now (``jobs.store.promote_due``): locks up to
# %(limit)s of them, earliest first, skipping rows another worker's promotion (or an
# operator's cancel) holds, and clears their flag in the same statement, so they enter the
# claims' range of ``jobs_claim`` and ``jobs_claim_any``; the locks last as long as this
# statement. Read from the front of the partial index ``jobs_due_later`` (run_at of the
# jobs due later), so it reads only the rows it promotes. Each queue that got jobs is
# notified, delivered at commit like the enqueue trigger's. The last column, from the same
# index's first entry not promoted here (the statement's snapshot still shows those), is
# how many seconds (by the database's clock) until the next job due later is due: the
# worker comes back then (at once when it is due already: left by a full batch, or held by
# another worker's promotion). The array and the outer SELECT
# are the claim's pattern; ``woken`` is read by the outer SELECT, or it would not run.
PROMOTE = f"""
WITH promoted AS (
UPDATE jobs_job SET due_later = false
 WHERE id = ANY(ARRAY(
        SELECT id FROM jobs_job
         WHERE status = 'queued' AND due_later AND run_at <= now()
         ORDER BY run_at
         LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED))
RETURNING id, queue
), woken AS (
SELECT queue, pg_notify('{CHANNEL}', queue) FROM (SELECT DISTINCT queue FROM promoted) AS due
)
SELECT (SELECT count(*) FROM promoted),
       ARRAY(SELECT queue FROM woken),
       (SELECT EXTRACT(EPOCH FROM min(run_at) - now())::float8 FROM jobs_job
         WHERE status = 'queued' AND due_later AND id <> ALL(ARRAY(SELECT id FROM promoted)))
"""

# A timer step's guard (``jobs.timers``): a transaction-level advisory lock on the step's
# 32-bit key, taken without waiting, so a second run of the same step at the same moment
# (two cron hosts, cron and django-q2) skips it instead of doing the work twice. It locks
# no row and no table, and needs no index. It is held by a transaction left open on a
# session of its own while the step runs, and ends with that transaction (or the session,
# if the process dies): never with a server session that a transaction pooler hands on.
TRY_LOCK_TIMER_STEP = "SELECT pg_try_advisory_xact_lock(%s)"

# --- metrics ---

# The metrics' snapshot (``jobs.metrics.measure``): its statements read from one
# consistent snapshot (REPEATABLE READ) and write nothing. Issued before the transaction's
# first read, it applies to that transaction only.
METRICS_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
# Its statement timeout: set_config(..., true) is SET LOCAL, so it ends with the transaction.
METRICS_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %s, true)"

# --- admin page ---

# The planner's row estimate for one status, read from the table statistics: EXPLAIN plans
# the query without running it, so it reads no rows; planning holds only ACCESS SHARE on
# jobs_job, which conflicts with nothing but ALTER/DROP/VACUUM FULL. The page's tiles show
# it for a status that holds more rows than they count exactly.
ESTIMATE_STATUS_ROWS = "EXPLAIN (FORMAT JSON) SELECT 1 FROM jobs_job WHERE status = %s"

# The newest job of each of many dedupe keys (a record list's "last job" column,
# ``jobs.queries.latest_jobs_about``): for every key one step backwards into the index
# ``jobs_dedupe_key`` (dedupe_key, id), whose first entry of the key is its newest job, so a
# key with a thousand kept jobs costs what one with a single job does and a page of a
# hundred records one short statement. A plain read: it locks nothing.
NEWEST_OF_KEYS = """
SELECT newest.id
  FROM unnest(%s::text[]) AS subject(dedupe_key)
 CROSS JOIN LATERAL (
       SELECT jobs_job.id FROM jobs_job
        WHERE jobs_job.dedupe_key = subject.dedupe_key AND jobs_job.type = ANY(%s::text[])
        ORDER BY jobs_job.id DESC
        LIMIT 1) AS newest
"""


def step_lock_key(name: str) -> int:
    """The advisory lock key of a timer step."""
    return zlib.crc32(f"jobs.timer:{name}".encode())


@cache
def _preparing_cursor() -> type:
    """psycopg's plain cursor class, preparing every statement it runs (imported here, so
    that importing the engine on another database never imports psycopg)."""
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        def execute(
            self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
        ) -> Any:  # noqa: ARG002
            return super().execute(query, params, prepare=True, binary=binary)

    return PreparingCursor


# Where ``PostgresDriver._kept_cursor`` keeps its cursor on Django's connection wrapper.
_KEPT = "_jobs_kept_cursor"


class _KeptCursor(NamedTuple):
    raw: Any  # the psycopg connection it runs on
    logged: bool  # made for a connection that logged its queries (DEBUG, assertNumQueries)
    cursor: Any


@cache
def _plain_cursor() -> type:
    """psycopg's plain cursor class: server-side binding, no prepared statement."""
    import psycopg

    return psycopg.Cursor


class _Notices:
    """The LISTEN session's notices (a ``Subscription``).

    Read from libpq directly (``pgconn.notifies``), not through psycopg's
    ``Connection.notifies()``, whose wait on the socket and lock cost a wake-up about 60 µs
    more (of some 2.5 ms from enqueue to start): the selector has already seen the socket
    readable. What psycopg reads while a statement runs on this session (the LISTEN itself)
    reaches ``_received``, registered before that statement."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw  # kept: the wrapper forgets its connection on close
        self._early: set[str] = set()
        raw.add_notify_handler(self._received)

    def _received(self, notice: Any) -> None:
        self._early.add(notice.payload)

    @property
    def closed(self) -> bool:
        return bool(self._raw.closed)

    def fileno(self) -> int:
        return int(self._raw.fileno())

    def drain(self) -> set[str]:
        pgconn = self._raw.pgconn
        pgconn.consume_input()  # raises on a broken connection: the listener reconnects
        found, self._early = self._early, set()
        while (notice := pgconn.notifies()) is not None:
            found.add(notice.extra.decode())
        return found


_BEGIN: tuple[str, Mapping[str, Any]] = ("BEGIN", {})
# A round's statements are prepared, and PostgreSQL would plan some of them again at each
# run (its custom plans, chosen over the generic one): a claim's rounds paid more for the
# planning than for the running. Their generic plans serve every run (each reads from the
# front of its index, as the plain claim's does), so the round's transaction asks for
# them; and for plans that read an index in claim order rather than scan or sort: a
# generic plan estimates the candidates' "not of a key at its limit" by the statistics
# alone, and where the queued keyed jobs share one key (a type-wide limit's backlog) that
# estimate is no row at all, for which PostgreSQL preferred scanning and sorting the table
# (110 ms with 100,000 queued) to reading the keyed index from its front (0.2 ms). The
# switches only price those plans out: a statement with no index to read, or whose rows
# must be sorted, still scans or sorts. For the round's transaction only (``set_config``
# local to it, as SET LOCAL: nothing of it outlives the round, nor reaches another client
# of a pooler).
ROUND_SETTINGS = {
    "plan_cache_mode": "force_generic_plan",
    "enable_seqscan": "off",
    "enable_bitmapscan": "off",
    "enable_sort": "off",
    # The switches price the plans they turn off at 10^10, whose total cost then asked
    # for JIT compilation (200 ms a statement) where a sort cannot be avoided.
    "jit": "off",
}
#: ``ROUND_SETTINGS`` for the round's transaction, in one statement (its row is dropped).
ROUND_SETTINGS_SQL = "SELECT " + ", ".join(
    f"set_config('{name}', '{value}', true)" for name, value in ROUND_SETTINGS.items()
)
_COMMIT: tuple[str, Mapping[str, Any]] = ("COMMIT", {})


class _FlowRound:
    """One round of a flow-controlled claim in two or three round trips (see "flow control"
    above): the transaction is begun and ended by the statements' text, the connection
    staying in autocommit for Django. Whatever happens before ``finish`` commits, the
    round ends with a ROLLBACK (which also releases the candidates' and the gates' locks)."""

    takes = True

    def __init__(self, driver: PostgresDriver) -> None:
        self.driver = driver
        self.open = False

    def _run(self, *statements: tuple[str, Mapping[str, Any]]) -> list[list[tuple[Any, ...]]]:
        """The rows of each statement that returns rows, in order: all in one round trip."""
        return [rows for rows in self.driver.execute_pipelined(statements) if rows is not None]

    def _begin(self, *statements: tuple[str, Mapping[str, Any]]) -> list[list[tuple[Any, ...]]]:
        """``_run`` of the round's first statements, after BEGIN and the round's settings."""
        return self._run(_BEGIN, (ROUND_SETTINGS_SQL, {}), *statements)[1:]

    def candidates(
        self,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool = False,
        first: Locks | None = None,
    ) -> tuple[list[Candidate], dict[str, str], Running | None]:
        statement = FLOW_CANDIDATES[keyed_only, len(queues) == 1]
        params = _candidates_params(queues, limit, full_keys, waiting_keys)
        self.open = True
        if first is None:
            [rows] = self._begin((statement, params))
            return [Candidate(*row) for row in rows], {}, None
        locked, counted, rows = self._begin(*_lock_and_count(*first), (statement, params))
        return [Candidate(*row) for row in rows], _windows(locked), _running(counted)

    def take(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool,
        first: Locks,
    ) -> Taken:
        params = {**_candidates_params(queues, limit, full_keys, waiting_keys), "worker": worker}
        self.open = True
        locked, counted, rows = self._begin(
            *_lock_and_count(*first), (FLOW_TAKE[keyed_only, len(queues) == 1], params)
        )
        running = _running(counted)
        if rows:  # the clock the jobs were started at, read after the gates' locks
            running = running._replace(now=int(rows[0][-1]))
        candidates = [Candidate(row[0], row[1], row[5], row[7], row[8]) for row in rows]
        return Taken(candidates, [ClaimedJob(*row[:7]) for row in rows], _windows(locked), running)

    def lock_and_count(
        self, gates: Sequence[str], keys: Sequence[str], queues: Sequence[str]
    ) -> tuple[dict[str, str], Running]:
        locked, counted = self._run(*_lock_and_count(gates, keys, queues))
        return _windows(locked), _running(counted)

    def finish(
        self,
        worker: str,
        ids: Sequence[int],
        at: datetime | None,
        rekeyed: Mapping[int, tuple[str | None, str | None]],
        gates: Mapping[str, GateSave],
    ) -> list[ClaimedJob]:
        with self.driver.cursor() as cursor:
            for job_id, (concurrency_key, rate_key) in rekeyed.items():
                cursor.execute(FLOW_REKEY, [concurrency_key, rate_key, job_id])
        rows: list[tuple[Any, ...]] = []
        saved = _gate_params(gates)
        if not ids and gates:
            self._run((FLOW_SAVE_GATES, saved), _COMMIT)
        elif ids:
            [rows] = self._run(
                (
                    FLOW_MARK_CLAIMED,
                    {
                        "worker": worker,
                        "ids": list(ids),
                        "at": at,
                        **saved,
                    },
                ),
                _COMMIT,
            )
        else:
            self._run(_COMMIT)
        self.open = False
        order = {job_id: position for position, job_id in enumerate(ids)}
        return sorted((ClaimedJob(*row) for row in rows), key=lambda job: order[job.id])

    def end(self) -> None:
        """End a round that did not finish: nothing it did stays, its locks go."""
        if not self.open:
            return
        self.open = False
        self.driver.roll_back_quietly()


def _lock_and_count(
    gates: Sequence[str], keys: Sequence[str], queues: Sequence[str]
) -> tuple[tuple[str, Mapping[str, Any]], tuple[str, Mapping[str, Any]]]:
    """The statements of ``FlowTransaction.lock_and_count``: the gates' lock, then the counts."""
    type_keys, own_keys = split_type_keys(keys)
    return (FLOW_LOCK_GATES, {"gates": list(gates)}), (
        FLOW_RUNNING,
        {"keys": own_keys, "type_keys": type_keys, "counted": list(queues)},
    )


def _windows(locked: list[tuple[Any, ...]]) -> dict[str, str]:
    """The locked gates' windows (FLOW_LOCK_GATES's rows), each with its pending pair and
    its leases."""
    return {key: with_pending(recent, at, pending, leases) for key, recent, at, pending, leases in locked}


def _gate_params(gates: Mapping[str, GateSave]) -> dict[str, list[Any]]:
    """FLOW_SAVE_GATES's arrays: one per column of ``GateSave``."""
    columns = list(zip(*gates.values(), strict=True)) or [()] * len(GateSave._fields)
    names = ("gate_recent", "gate_slots", "gate_starts", "gate_until", "gate_basis", "gate_leases")
    return {
        "gate_keys": list(gates),
        **{name: list(column) for name, column in zip(names, columns, strict=True)},
    }


def _int_array(values: Iterable[int]) -> str:
    """``values`` as the text of a PostgreSQL array, for a parameter the statement casts
    (``%(ids)s::bigint[]``): sent untyped, the parameter is prepared as the array the
    statement reads. psycopg sends a list of small numbers as smallint[] (or integer[]), and
    the acknowledgement, which finds each row's attempt by the row's place in the id array,
    then cast that array again for every row: 0.7 ms of an acknowledgement of 128
    (2.1–2.2 ms instead of 2.8–2.9). psycopg also adapts a list element by element in
    Python (120 µs for those 256 numbers, the join a quarter of that). Integers need no
    quoting."""
    return "{" + ",".join(map(str, values)) + "}"


def _candidates_params(
    queues: Sequence[str], limit: int, full_keys: Sequence[str], waiting_keys: Sequence[str]
) -> dict[str, Any]:
    return {
        "queue": queues[0],
        "queues": list(queues),
        "limit": limit,
        "full": list(full_keys),
        "waiting": list(waiting_keys),
    }


def _running(rows: list[tuple[Any, ...]]) -> Running:
    by_key: dict[str, int] = {}
    by_queue: dict[str, int] = {}
    now = 0
    for kind, name, count in rows:
        if kind == "now":
            now = int(count)
        elif kind == "key":
            by_key[name] = int(count)
        else:
            by_queue[name] = int(count)
    return Running(now, by_key, by_queue)


# deadlock_detected, serialization_failure, lock_not_available (a lock_timeout ran out).
CONFLICT_STATES = frozenset({"40P01", "40001", "55P03"})


class PostgresDriver(OrmDriver):
    vendor = "postgresql"
    listens = True

    def is_conflict(self, error: BaseException) -> bool:
        return getattr(error.__cause__, "sqlstate", None) in CONFLICT_STATES

    def execute_prepared(self, statement: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run a hot-path statement as a server-side prepared statement, through Django's
        cursor wrapper like every other statement (execute wrappers, the DEBUG query log).

        Django's cursors bind parameters on the client and never prepare (for the sake of
        connection poolers); the claim and the acknowledgement run thousands of times a
        second, so they skip parsing and planning. ``JOBS_PREPARED_STATEMENTS=false``
        turns this off for a pooler that cannot keep prepared statements.
        """
        if not jobs_settings.PREPARED_STATEMENTS:
            return self.execute(statement, params)
        cursor = self._kept_cursor()
        cursor.execute(statement, params)
        return cursor.fetchall()

    def execute_pipelined(
        self, statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[list[tuple[Any, ...]] | None]:
        """Run ``statements`` in one round trip (psycopg's pipeline mode), each prepared as
        ``execute_prepared`` prepares (server-side binding, unprepared with
        ``JOBS_PREPARED_STATEMENTS=false``), each through Django's cursor wrapper: the rows
        of each, None for one that returns none. A statement that fails raises here, and
        the ones after it did not run."""
        cursors = self._server_cursors(len(statements))
        try:
            connection = self.connection
            with connection.wrap_database_errors:
                # Leaving the pipeline sends it and waits for every answer: one round trip.
                with connection.connection.pipeline():
                    for cursor, (statement, params) in zip(cursors, statements, strict=True):
                        cursor.execute(statement, params)
                return [cursor.fetchall() if cursor.description is not None else None for cursor in cursors]
        finally:
            for cursor in cursors:
                cursor.close()

    def _kept_cursor(self) -> Any:
        """The connection's cursor for ``execute_prepared``, made once (as
        ``_server_cursors`` makes one) and kept on Django's connection wrapper until the
        connection or the query log's need changes: a new cursor on each statement cost a
        wake-up some 50 µs on each side (the enqueue, the claim), cold after the process
        idled. Per wrapper, so per thread, as Django's connections are."""
        connection = self._checked_connection()
        raw, logged = connection.connection, connection.queries_logged
        kept: _KeptCursor | None = getattr(connection, _KEPT, None)
        if kept is None or kept.raw is not raw or kept.logged != logged:
            kept = _KeptCursor(raw, logged, self._wrapped_cursors(connection, 1)[0])
            setattr(connection, _KEPT, kept)
        return kept.cursor

    def _server_cursors(self, count: int) -> list[Any]:
        """``count`` cursors of Django's wrapping (as ``connection.cursor()`` makes one: the
        execute wrappers, the query log under DEBUG) around psycopg's server-side binding
        cursor, preparing each statement unless ``JOBS_PREPARED_STATEMENTS=false``; the
        connection checked once for them all."""
        return self._wrapped_cursors(self._checked_connection(), count)

    def _checked_connection(self) -> BaseDatabaseWrapper:
        """The connection, as Django's ``cursor()`` has it before a statement: closed first
        if its health check failed (``CONN_HEALTH_CHECKS``), and connected."""
        connection = self.connection
        connection.close_if_health_check_failed()
        connection.ensure_connection()
        return connection

    @staticmethod
    def _wrapped_cursors(connection: BaseDatabaseWrapper, count: int) -> list[Any]:
        raw = connection.connection
        if raw.prepare_threshold is None:
            raw.prepare_threshold = 2**31 - 1  # prepare only what asks for it explicitly
        cursor_class = _preparing_cursor() if jobs_settings.PREPARED_STATEMENTS else _plain_cursor()
        with connection.wrap_database_errors:
            return [connection._prepare_cursor(cursor_class(raw)) for _ in range(count)]  # type: ignore[attr-defined]

    def upkeep_off(self) -> str | None:
        with self.cursor() as cursor:
            cursor.execute(AUTOVACUUM_OFF)
            server, table = cursor.fetchone()
        if server:
            return "autovacuum is off for the whole server (its autovacuum or track_counts setting)"
        if table:
            return "autovacuum is off for jobs_job (its autovacuum_enabled storage parameter)"
        return None

    def prepare_supervisor_session(self, connection: BaseDatabaseWrapper) -> None:
        with connection.cursor() as cursor:
            cursor.execute(SUPERVISOR_ASYNC_COMMIT)

    def insert_one(self, fields: Mapping[str, Any], payload_text: str) -> Job | None:
        # One prepared statement and one round trip: enqueue is on every producer's path.
        rows = self.execute_prepared(
            INSERT_ONE,
            {
                "concurrency_key": None,
                "rate_key": None,
                **fields,
                "payload": payload_text,
                "run_at": fields.get("run_at"),
                "traceparent": fields.get("traceparent"),
                "due_later": fields.get("due_later", False),
            },
        )
        if not rows:
            return None
        job_id, run_at, created_at = rows[0]
        job = Job(
            id=job_id,
            run_at=run_at,
            created_at=created_at,
            **{k: v for k, v in fields.items() if k != "run_at"},
        )
        job._state.adding = False
        job._state.db = self.alias
        return job

    def insert_many(self, batch: Batch) -> int:
        params: dict[str, Any] = {
            "type": batch.type,
            "queue": batch.queue,
            "priority": batch.priority,
            "run_at": batch.run_at,
            "due_later": batch.due_later,
            "max_attempts": batch.max_attempts,
            "payloads": list(batch.payloads),
            "dedupe_keys": list(batch.dedupe_keys),
            "traceparent": batch.traceparent,
        }
        statement = INSERT_MANY
        if batch.limit_keys is not None:
            statement = INSERT_MANY_LIMITED
            params.update(concurrency_keys=batch.concurrency_keys(), rate_keys=batch.rate_keys())
        with self.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.rowcount

    def claim(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        *,
        unkeyed: bool = False,
        with_rows: Sequence[str] = (),
        leased: Leased | None = None,
    ) -> list[ClaimedJob]:
        one = len(queues) == 1
        params: dict[str, Any] = {"worker": worker, "limit": limit}
        if one:
            params["queue"] = queues[0]
        else:
            params["queues"] = list(queues)
        keys = "unkeyed" if unkeyed else ""
        if leased is not None:
            keys = "leased"
            params.update(
                lease_type=leased.type,
                lease_concurrency_key=leased.concurrency_key,
                lease_rate_key=leased.rate_key,
                lease_until=leased.until,
            )
        if not with_rows:
            return [ClaimedJob(*row) for row in self.execute_prepared(CLAIMS[one, keys, False], params)]
        params["row_types"] = list(with_rows)
        return [
            ClaimedJob(job_id, type_name, payload, attempt, most, queue, step)
            if priority is None
            else ClaimedJob(
                job_id, type_name, payload, attempt, most, queue, step,
                try_fields=(priority, run_at, created_at, started_at, tried),
            )
            for job_id, type_name, payload, attempt, most, queue, step, priority, run_at, created_at, started_at, tried
            in self.execute_prepared(CLAIMS[one, keys, True], params)
        ]  # fmt: skip

    def flow_take_spared(self, plan: SparedPlan) -> list[ClaimedJob] | None:
        params = {
            **_candidates_params(plan.queues, plan.limit, plan.full_keys, plan.waiting_keys),
            "worker": plan.worker,
            "gates": list(plan.gates),
            "bases": list(plan.bases),
            "periods": list(plan.periods),
            "types": list(plan.types),
            "concurrency_keys": list(plan.concurrency_keys),
            "rate_keys": list(plan.rate_keys),
        }
        # In a transaction of its own, for the round's settings: its generic plan would read
        # the candidates as a round's did before them (a type-wide backlog: scanned, sorted).
        statement = FLOW_TAKE_SPARED[plan.keyed_only, len(plan.queues) == 1]
        try:
            _, _, taken, _ = self.execute_pipelined(
                [_BEGIN, (ROUND_SETTINGS_SQL, {}), (statement, params), _COMMIT]
            )
        except BaseException:
            self.roll_back_quietly()
            raise
        *rows, (*_, fine) = taken or []
        if not fine:
            return None
        rows.sort(key=lambda row: row[7])  # claim order, as numbered by the statement
        return [ClaimedJob(*row[:7]) for row in rows]

    def roll_back_quietly(self) -> None:
        """End the session's open transaction, if the session is still there (a broken
        connection is the guard's to handle)."""
        connection = self.connection
        if connection.connection is None or connection.connection.closed:
            return  # the session, and its transaction, are gone
        with contextlib.suppress(Exception), self.cursor() as cursor:
            cursor.execute("ROLLBACK")

    @contextmanager
    def flow_transaction(self) -> Iterator[FlowTransaction]:
        if self.connection.in_atomic_block:  # a caller's transaction (a test's): step by step
            with super().flow_transaction() as steps:
                yield steps
            return
        round_ = _FlowRound(self)
        try:
            yield round_
        finally:
            round_.end()

    def promote_due(self, limit: int) -> Promoted:
        # One prepared statement: the promotion, the notices and the next due moment.
        [(count, queues, next_due_in)] = self.execute_prepared(PROMOTE, {"limit": limit})
        return Promoted(count, sorted(queues), next_due_in)

    def complete_many(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None
    ) -> list[Done]:
        params: dict[str, Any] = {
            "ids": _int_array(job_id for job_id, _ in done),
            "attempts": _int_array(attempt for _, attempt in done),
            "worker": worker,
        }
        if results is None:
            rows = self.execute_prepared(COMPLETE, params)
        else:
            rows = self.execute_prepared(COMPLETE_WITH_RESULTS, {**params, "results": list(results)})
        return [Done(*row) for row in rows]

    def insert_steps(self, workflow_id: int, rows: Sequence[StepRow], added_by: int | None) -> list[int]:
        if not rows:
            return []
        columns = {name: [getattr(row, name) for row in rows] for name in StepRow._fields}
        found = dict(
            (position, step_id)
            for step_id, position in self.execute(
                INSERT_STEPS, {"workflow": workflow_id, "added_by": added_by, **columns}
            )
        )
        return [found[row.position] for row in rows]

    def insert_edges(self, pairs: Sequence[tuple[int, int]]) -> None:
        if pairs:
            self.execute(
                INSERT_EDGES, {"upstream": [up for up, _ in pairs], "downstream": [down for _, down in pairs]}
            )

    def release_workflow(self, workflow_id: int) -> int:
        with self.cursor() as cursor:
            cursor.execute(RELEASE_WORKFLOW, {"workflow": workflow_id})
            return cursor.rowcount

    def release_steps(self, step_ids: Sequence[int]) -> int:
        with self.cursor() as cursor:
            cursor.execute(RELEASE_STEPS, {"ids": list(step_ids)})
            return cursor.rowcount

    def release_successors(self, step_id: int) -> int:
        with self.cursor() as cursor:
            cursor.execute(RELEASE_SUCCESSORS, {"step": step_id})
            return cursor.rowcount

    def notify(self, queues: Sequence[str]) -> None:
        if not queues:
            return
        with self.cursor() as cursor:
            for queue in queues:
                cursor.execute(NOTIFY, [CHANNEL, queue])

    def listen(self, connection: BaseDatabaseWrapper) -> _Notices:
        connection.ensure_connection()
        connection.connection.autocommit = True
        notices = _Notices(connection.connection)  # first: it hears what comes with the LISTEN
        with connection.cursor() as cursor:
            cursor.execute(LISTEN)
        return notices

    @contextmanager
    def try_lock_steps(self, session: BaseDatabaseWrapper, names: Sequence[str]) -> Iterator[bool]:
        session.set_autocommit(False)
        try:
            held = True
            with session.cursor() as cursor:
                for name in names:
                    cursor.execute(TRY_LOCK_TIMER_STEP, [step_lock_key(name)])
                    row = cursor.fetchone()
                    if not (row and row[0]):
                        held = False
                        break
            yield held
        finally:
            session.rollback()  # ends the transaction: every lock it took goes with it
            session.set_autocommit(True)

    def task_rows(self, job_ids: Sequence[int]) -> list[TaskRow]:
        # One prepared statement for a whole batch: a worker reads them before every try.
        return [TaskRow(*row) for row in self.execute_prepared(TASK_ROWS, {"ids": list(job_ids)})]

    def task_try_rows(self, job_ids: Sequence[int]) -> list[TaskTryRow]:
        rows = self.execute_prepared(TASK_TRY_ROWS, {"ids": _int_array(job_ids)})
        return [try_row(row[0], row[1], row[2:]) for row in rows]

    def newest_of_keys(self, dedupe_keys: Sequence[str], types: Sequence[str]) -> Q:
        return Q(pk__in=RawSQL(NEWEST_OF_KEYS, [list(dedupe_keys), list(types)]))

    def estimate_rows(self, status: str) -> int:
        with self.cursor() as cursor:
            cursor.execute(ESTIMATE_STATUS_ROWS, [status])
            row = cursor.fetchone()
        if row is None:  # EXPLAIN always answers; this only satisfies the type of fetchone()
            return 0
        plan = row[0]
        if isinstance(plan, str):
            plan = json.loads(plan)
        return int(plan[0]["Plan"]["Plan Rows"])

    @contextmanager
    def metrics_snapshot(self, timeout_ms: int) -> Iterator[None]:
        with transaction.atomic(using=self.alias):
            with self.cursor() as cursor:
                cursor.execute(METRICS_SNAPSHOT)
                cursor.execute(METRICS_STATEMENT_TIMEOUT, [str(timeout_ms)])
            yield
