"""The MariaDB driver (10.6+, and MySQL 8): its own SQL for the hot path and the admin.

No partial indexes, no UPDATE … RETURNING, no LISTEN/NOTIFY, no advisory locks. The
schema below replaces the model's partial indexes (migrations 0010 and 0012); the claim is
a short transaction of two statements, the acknowledgement one statement; workers poll;
timers take GET_LOCK. The verbs without
SQL of their own here are the ORM's (``jobs.drivers.orm``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from jobs.drivers.orm import OrmDriver, moment, placeholders
from jobs.drivers.protocol import (
    Batch,
    Candidate,
    ClaimedJob,
    Done,
    GateSave,
    Leased,
    Promoted,
    Running,
    SparedPlan,
    StepRow,
)
from jobs.drivers.read_positions import Position, ReadPositions
from jobs.flow import spare
from jobs.flow.limits import TYPE_PREFIX, split_type_keys
from jobs.flow.rates import with_pending

if TYPE_CHECKING:
    from jobs.models import Job

# --- schema (migration 0010) ---

# Deduplication among queued and running jobs: ``dedupe_active`` is the dedupe key while
# the job is queued or running and NULL once it has finished (a generated column the
# database keeps), and a unique index on (type, dedupe_active) allows any number of NULLs.
# So a second active job of one key is refused by the index itself (error 1062), whatever
# the race: a twin's insert waits on the first one's uncommitted index entry and then
# fails.
#
# Django builds the model's partial indexes here without their condition (and skips the
# conditional unique constraint). Those of the claim, the heartbeat and a queue's failed
# list are rebuilt to lead with the status, since every index covers every row here: a
# million finished jobs then add entries but no reads. ``jobs_rare_status`` (status, id)
# and ``jobs_dedupe_key`` (dedupe_key, id) serve as Django builds them.
_DJANGO_SHAPES = {
    "jobs_claim": "queue, priority, run_at, id",
    "jobs_claim_any": "priority, run_at, id",
    "jobs_running": "locked_by, heartbeat_at",
    "jobs_failed_queue": "queue, id",
}
_STATUS_FIRST = {name: f"status, {columns}" for name, columns in _DJANGO_SHAPES.items()}
SCHEMA = (
    """ALTER TABLE jobs_job ADD COLUMN dedupe_active varchar(255)
        GENERATED ALWAYS AS (IF(status IN ('queued', 'running'), dedupe_key, NULL)) STORED""",
    "CREATE UNIQUE INDEX jobs_dedupe_active ON jobs_job (type, dedupe_active)",
    # The failed list and its tile hold the failed jobs not dismissed: counted and listed
    # from this index alone, where (status, id) would look up every row's dismissed_at (a
    # million-row table: 0.8 s a count once the rows are out of the buffer pool, 7 ms here).
    "CREATE INDEX jobs_failed_list ON jobs_job (status, dismissed_at, id)",
    *(
        f"ALTER TABLE jobs_job DROP INDEX {name}, ADD INDEX {name} ({columns})"
        for name, columns in _STATUS_FIRST.items()
    ),
)
SCHEMA_UNDO = (
    *(
        f"ALTER TABLE jobs_job DROP INDEX {name}, ADD INDEX {name} ({columns})"
        for name, columns in _DJANGO_SHAPES.items()
    ),
    "DROP INDEX jobs_failed_list ON jobs_job",
    "DROP INDEX jobs_dedupe_active ON jobs_job",
    "ALTER TABLE jobs_job DROP COLUMN dedupe_active",
)

# --- schema (migration 0012): jobs due later ---

# A job due later (``due_later``, see the model) is kept out of the claims' range: the claim
# indexes lead with (status, due_later), so a claim reads the ready jobs alone. The jobs
# due later are found by ``due_at``, their run_at while they wait and NULL otherwise (a
# generated column), under an index of its own: a promotion reads those now due from its
# front. A claim or an acknowledgement changes the status of a job whose ``due_at`` is
# NULL before and after, so InnoDB leaves that index alone: it costs the hot path nothing,
# as the partial index ``jobs_due_later`` does on PostgreSQL.
_DUE_LATER_SHAPES = {
    "jobs_claim": "status, due_later, queue, priority, run_at, id",
    "jobs_claim_any": "status, due_later, priority, run_at, id",
    "jobs_due_later": "due_at",
}
# 0010's shapes of the claim indexes, which 0012 replaces (and puts back when reversed).
_STATUS_FIRST_0010 = {name: _STATUS_FIRST[name] for name in ("jobs_claim", "jobs_claim_any")}
SCHEMA_DUE_LATER = (
    """ALTER TABLE jobs_job ADD COLUMN due_at datetime(6)
        GENERATED ALWAYS AS (IF(status = 'queued' AND due_later, run_at, NULL)) STORED""",
    "ALTER TABLE jobs_job "
    + ", ".join(
        f"DROP INDEX {name}, ADD INDEX {name} ({columns})" for name, columns in _DUE_LATER_SHAPES.items()
    ),
)
# Back to the indexes Django builds from the model (0012's own operations then undo them).
SCHEMA_DUE_LATER_UNDO = (
    "ALTER TABLE jobs_job DROP INDEX jobs_due_later, ADD INDEX jobs_due_later (run_at)",
    "ALTER TABLE jobs_job DROP COLUMN due_at",
    "ALTER TABLE jobs_job DROP INDEX jobs_claim, ADD INDEX jobs_claim (queue, due_later, priority, run_at, id), "
    "DROP INDEX jobs_claim_any, ADD INDEX jobs_claim_any (due_later, priority, run_at, id)",
)
# Reversing 0012 puts back the claim indexes Django builds for 0011's model; these make
# them 0010's again.
SCHEMA_CLAIM_0010 = (
    "ALTER TABLE jobs_job "
    + ", ".join(
        f"DROP INDEX {name}, ADD INDEX {name} ({columns})" for name, columns in _STATUS_FIRST_0010.items()
    ),
)

# --- workflow schema (migration 0014) ---

# One running workflow per (name, dedupe key), as ``dedupe_active`` does it for jobs: the
# generated ``running_key`` is the key while the workflow runs, NULL after, and a unique
# index allows any number of NULLs. One job per workflow step: a unique index on the job's
# step (jobs outside a workflow hold NULL, as many as there are).
WORKFLOW_SCHEMA = (
    """ALTER TABLE jobs_workflow ADD COLUMN running_key varchar(255)
        GENERATED ALWAYS AS (IF(status = 'running', dedupe_key, NULL)) STORED""",
    "CREATE UNIQUE INDEX jobs_workflow_running_key ON jobs_workflow (name, running_key)",
    "CREATE UNIQUE INDEX jobs_step_job ON jobs_job (step_id)",
)
WORKFLOW_SCHEMA_UNDO = (
    "DROP INDEX jobs_step_job ON jobs_job",
    "DROP INDEX jobs_workflow_running_key ON jobs_workflow",
    "ALTER TABLE jobs_workflow DROP COLUMN running_key",
)

# --- flow control schema (migration 0013) ---

# Flow control. The running jobs of a concurrency key are counted from
# ``jobs_running_key``, which Django builds here on (concurrency_key) for every row; led
# by the status, a key's finished jobs (a type-wide key has them all) add no reads.
# The queued jobs that carry a limit key are claimed from ``jobs_claim_keyed``: on
# ``flow_queue``, the job's queue while it is queued with a key (and not due later) and
# NULL otherwise (a generated column the database keeps), so a job without keys never moves
# in this index, and a claim reads only keyed jobs, in claim order, however many others wait.
FLOW_SCHEMA = (
    "ALTER TABLE jobs_job DROP INDEX jobs_running_key, ADD INDEX jobs_running_key (status, concurrency_key)",
    """ALTER TABLE jobs_job ADD COLUMN flow_queue varchar(50)
        GENERATED ALWAYS AS (IF(status = 'queued' AND NOT due_later
                                AND (concurrency_key IS NOT NULL OR rate_key IS NOT NULL), queue, NULL)) STORED""",
    "ALTER TABLE jobs_job DROP INDEX jobs_claim_keyed, ADD INDEX jobs_claim_keyed (flow_queue, priority, run_at, id)",
)
FLOW_SCHEMA_UNDO = (
    "ALTER TABLE jobs_job DROP INDEX jobs_claim_keyed, ADD INDEX jobs_claim_keyed (queue, priority, run_at, id)",
    "ALTER TABLE jobs_job DROP COLUMN flow_queue",
    "ALTER TABLE jobs_job DROP INDEX jobs_running_key, ADD INDEX jobs_running_key (concurrency_key)",
)

# --- the claim of keyed jobs across queues (migration 0019) ---

# ``jobs_claim_keyed_any``: the queued jobs that carry a limit key, in claim order across
# queues, for a lane that serves several. Led by ``flow_due``, 1 while the job is queued
# with a key (and not due later) and NULL otherwise, as ``flow_queue`` is its queue: a job
# without keys never moves in this index.
CLAIM_KEYED_ANY_SCHEMA = (
    "ALTER TABLE jobs_job DROP INDEX jobs_claim_keyed_any",
    """ALTER TABLE jobs_job ADD COLUMN flow_due tinyint
        GENERATED ALWAYS AS (IF(status = 'queued' AND NOT due_later
                                AND (concurrency_key IS NOT NULL OR rate_key IS NOT NULL), 1, NULL)) STORED""",
    "ALTER TABLE jobs_job ADD INDEX jobs_claim_keyed_any (flow_due, priority, run_at, id)",
)
CLAIM_KEYED_ANY_SCHEMA_UNDO = (
    "ALTER TABLE jobs_job DROP INDEX jobs_claim_keyed_any",
    "ALTER TABLE jobs_job DROP COLUMN flow_due",
    "ALTER TABLE jobs_job ADD INDEX jobs_claim_keyed_any (priority, run_at, id)",
)

# --- indexes that stay still as a job runs (migration 0022) ---

# InnoDB moves a row's entry in every index whose columns the UPDATE changes: led by the
# status, the claim indexes and ``jobs_running_key`` moved at the claim and again at the
# acknowledgement, for every job. Led instead by generated columns that hold a value only
# in the state the index serves (``claim_ready``: 1 while the job is queued and not due
# later; ``running_key``: the concurrency key while the job runs) and NULL otherwise, the
# claim indexes move once (at the claim) and ``jobs_running_key`` never for a job without a
# key: an acknowledgement of 128 jobs took 13–19 % less (docs/benchmarks.md).
STILL_INDEXES_SCHEMA = (
    """ALTER TABLE jobs_job
        ADD COLUMN claim_ready tinyint
            GENERATED ALWAYS AS (IF(status = 'queued' AND NOT due_later, 1, NULL)) STORED,
        ADD COLUMN running_key varchar(255)
            GENERATED ALWAYS AS (IF(status = 'running', concurrency_key, NULL)) STORED""",
    """ALTER TABLE jobs_job
        DROP INDEX jobs_claim, ADD INDEX jobs_claim (claim_ready, queue, priority, run_at, id),
        DROP INDEX jobs_claim_any, ADD INDEX jobs_claim_any (claim_ready, priority, run_at, id),
        DROP INDEX jobs_running_key, ADD INDEX jobs_running_key (running_key)""",
)
# Migration 0024: ``running_key`` without the type-wide keys (``type:…``), as PostgreSQL's
# ``jobs_running_key`` is without them (0021): every running job of a type with a type-wide
# limit moved an entry of that index at its claim and again at its acknowledgement, for
# the rare claim that counts them, which reads them through ``jobs_running`` instead
# (``FLOW_RUNNING_TYPE_KEYS``). The column is rebuilt: the table is copied (writes wait).
RUNNING_KEY_WITHOUT_TYPE_KEYS_SCHEMA = (
    f"""ALTER TABLE jobs_job MODIFY running_key varchar(255)
        GENERATED ALWAYS AS (IF(status = 'running' AND concurrency_key NOT LIKE '{TYPE_PREFIX}%%', concurrency_key, NULL))
        STORED""",
)
RUNNING_KEY_WITHOUT_TYPE_KEYS_SCHEMA_UNDO = (
    """ALTER TABLE jobs_job MODIFY running_key varchar(255)
        GENERATED ALWAYS AS (IF(status = 'running', concurrency_key, NULL)) STORED""",
)
STILL_INDEXES_SCHEMA_UNDO = (
    """ALTER TABLE jobs_job
        DROP INDEX jobs_claim, ADD INDEX jobs_claim ({claim}),
        DROP INDEX jobs_claim_any, ADD INDEX jobs_claim_any ({claim_any}),
        DROP INDEX jobs_running_key, ADD INDEX jobs_running_key (status, concurrency_key)""".format(
        claim=_DUE_LATER_SHAPES["jobs_claim"], claim_any=_DUE_LATER_SHAPES["jobs_claim_any"]
    ),
    "ALTER TABLE jobs_job DROP COLUMN claim_ready, DROP COLUMN running_key",
)

# Migration 0026: of the indexes led by the status, which move an entry at every job's claim
# and again at its acknowledgement, one is left. ``jobs_running`` becomes (status, id,
# locked_by): the running rows for the heartbeat, the reaper (in id order) and the flow
# counts, and every status's rows newest first for the admin's lists and the tiles' counts
# and estimates. The failed lists' indexes and ``jobs_rare_status``, which ``jobs_running``
# now stands in for, are led by ``failed``, 1 while the job has failed and NULL otherwise:
# a job that succeeds never moves them. Ten index moves a successful job became four (the
# claim indexes at its claim, ``jobs_running`` at its claim and its acknowledgement), and a
# heartbeat no longer moves any. The failed lists' reads name the column
# (``FAILED_LISTED``, ``MariaDBDriver.failed``), as MariaDB does not find an index on a
# generated column from its expression.
FAILED_SCHEMA = (
    """ALTER TABLE jobs_job ADD COLUMN failed tinyint
        GENERATED ALWAYS AS (IF(status = 'failed', 1, NULL)) STORED""",
    """ALTER TABLE jobs_job
        DROP INDEX jobs_running, ADD INDEX jobs_running (status, id, locked_by),
        DROP INDEX jobs_rare_status, ADD INDEX jobs_rare_status (failed, id),
        DROP INDEX jobs_failed_list, ADD INDEX jobs_failed_list (failed, dismissed_at, id),
        DROP INDEX jobs_failed_queue, ADD INDEX jobs_failed_queue (failed, queue, id)""",
)
FAILED_SCHEMA_UNDO = (
    """ALTER TABLE jobs_job
        DROP INDEX jobs_running, ADD INDEX jobs_running (status, locked_by, heartbeat_at),
        DROP INDEX jobs_rare_status, ADD INDEX jobs_rare_status (status, id),
        DROP INDEX jobs_failed_list, ADD INDEX jobs_failed_list (status, dismissed_at, id),
        DROP INDEX jobs_failed_queue, ADD INDEX jobs_failed_queue (status, queue, id)""",
    "ALTER TABLE jobs_job DROP COLUMN failed",
)
# Migration 0027: ``claim_ready`` without the jobs that carry a limit key, which the keyed
# indexes (``flow_queue``, ``flow_due``) already hold: each queued job is in one pair of claim
# indexes. A keyed job's claim moved the entries of both pairs (four where a plain job's
# moves two: a cycle of 128 keyed jobs 13 % longer than of plain ones, 6 % after), and the
# plain claim of a queue holding both kinds read past every keyed job waiting in it. The
# claims that want both kinds read both pairs: flow control's candidates in a queue with
# limits of its own (``FLOW_CANDIDATES_*``, a UNION of the two reads), and the plain claim
# of a queue whose types have no limits, which takes the keyed jobs there after the plain
# ones (``CLAIM_*_STRAYS``: jobs enqueued under limits a type no longer has, or that only a
# newer release of the code declares).
CLAIM_READY_UNKEYED_SCHEMA = (
    """ALTER TABLE jobs_job MODIFY claim_ready tinyint
        GENERATED ALWAYS AS (IF(status = 'queued' AND NOT due_later
                                AND concurrency_key IS NULL AND rate_key IS NULL, 1, NULL)) STORED""",
)
CLAIM_READY_UNKEYED_SCHEMA_UNDO = (
    """ALTER TABLE jobs_job MODIFY claim_ready tinyint
        GENERATED ALWAYS AS (IF(status = 'queued' AND NOT due_later, 1, NULL)) STORED""",
)
#: The failed jobs (the same rows as ``status = 'failed'``), as the failed lists' indexes find them.
FAILED_LISTED = "`jobs_job`.`failed` = 1"
#: The queued jobs due by a moment (``status = 'queued' AND run_at <= %s``), as the indexes
#: that hold only queued jobs find them: the claim indexes (``claim_ready``, ``flow_due``)
#: the jobs not due later, ``jobs_due_later`` (``due_at``: run_at while due later) those not
#: promoted yet; MariaDB merges the three indexes' ranges. Led by the status, a count of
#: due jobs read every queued row: a million jobs due later, 1.3 s a queue.
DUE_BY = (
    "(`jobs_job`.`claim_ready` = 1 OR `jobs_job`.`flow_due` = 1 OR `jobs_job`.`due_at` <= %s)"
    " AND `jobs_job`.`run_at` <= %s"
)

# --- sessions ---

# Every session of the engine speaks UTC (``prepare_session``): Django stores UTC in the
# datetime columns, and the statements below compare them with CURRENT_TIMESTAMP, the
# session's time.
SESSION_UTC = "SET time_zone = '+00:00'"
# The session's collation and that of the engine's jobs table. A literal in a statement
# takes the session's; compared with a column of another collation it fails ("Illegal mix
# of collations") or no longer counts as fixing the column for the index the statement
# reads (``check_collation``, platform.W004).
SESSION_AND_TABLE_COLLATIONS = """
SELECT @@collation_connection, TABLE_COLLATION FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'jobs_job'
"""

# --- claim and finish ---

# The claim, first statement: locks up to %s due, queued rows of the lane's queues that are
# not due later, in claim order, skipping rows another worker holds (MariaDB 10.6+, MySQL
# 8), and reads what the worker needs of them. The index is named because the optimiser,
# seeing few rows, may prefer another one and sort; read in this index's order from the
# first ready entry (``claim_ready`` = 1 leads it), the statement stops after
# ``limit`` rows, however long the backlog and however many jobs wait for a later time.
# The ORDER BY names only the columns after those the WHERE fixes (here and in every claim
# below): naming them too, MariaDB sorts every ready row instead of reading the index in
# order whenever the session's collation is not the tables' (a literal compared with a
# column of another collation is not taken as fixing it), 20 ms and more a claim.
# Under READ COMMITTED (the worker's isolation level) it locks only the rows it returns.
# The same transaction then marks them running by primary key (MARK_CLAIMED) and commits:
# the locks live for those two statements. The rows are locked when read, so the attempt
# the UPDATE writes is the one read plus one. Each row also gives its due time and the
# statement's clock, which MARK_CLAIMED writes as its start: the worker keeps both for the
# acknowledgement (``MariaDBDriver.complete_many``), which then need not read them back. Its
# priority with its due time and id place it in claim order (``read_positions``).
_CLAIMED_COLUMNS = "id, type, payload, attempts, max_attempts, queue, step_id"
_CLAIM_COLUMNS = f"{_CLAIMED_COLUMNS}, priority, run_at, CURRENT_TIMESTAMP(6)"
# The plain jobs of one queue (``jobs_claim``) or of several (``jobs_claim_any``) in claim
# order, locked: ``{columns}`` of them, under the conditions ``{more}``.
_PLAIN_ONE_QUEUE = """
SELECT {columns} FROM jobs_job FORCE INDEX (jobs_claim)
 WHERE claim_ready = 1 AND queue = %s AND run_at <= CURRENT_TIMESTAMP(6){more}
 ORDER BY priority, run_at, id
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
_PLAIN_QUEUES = """
SELECT {columns} FROM jobs_job FORCE INDEX (jobs_claim_any)
 WHERE claim_ready = 1 AND queue IN ({queues}) AND run_at <= CURRENT_TIMESTAMP(6){more}
 ORDER BY priority, run_at, id
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
CLAIM_ONE_QUEUE = _PLAIN_ONE_QUEUE.format(columns=_CLAIM_COLUMNS, more="")
CLAIM_QUEUES = _PLAIN_QUEUES.format(columns=_CLAIM_COLUMNS, more="", queues="{queues}")
# The same read on from where this worker's last claim of the queues stopped (``_AFTER``),
# while that position is fresh: the entries before it that purge has not yet removed are
# not stepped over again (``jobs.drivers.read_positions``). When it comes back short, the
# jobs up to the position (``_UP_TO``) are read in the same transaction, so a short claim
# still means that nothing more is due.
_AFTER = "\n   AND (priority > %s OR (priority = %s AND (run_at > %s OR (run_at = %s AND id > %s))))"
_UP_TO = "\n   AND (priority < %s OR (priority = %s AND (run_at < %s OR (run_at = %s AND id <= %s))))"
CLAIM_ONE_QUEUE_AFTER = _PLAIN_ONE_QUEUE.format(columns=_CLAIM_COLUMNS, more=_AFTER)
CLAIM_QUEUES_AFTER = _PLAIN_QUEUES.format(columns=_CLAIM_COLUMNS, more=_AFTER, queues="{queues}")
CLAIM_ONE_QUEUE_UP_TO = _PLAIN_ONE_QUEUE.format(columns=_CLAIM_COLUMNS, more=_UP_TO)
CLAIM_QUEUES_UP_TO = _PLAIN_QUEUES.format(columns=_CLAIM_COLUMNS, more=_UP_TO, queues="{queues}")
# These read only the jobs without limit keys (``claim_ready``, migration 0027), as the claim
# of a queue that also holds jobs with flow limits must; a queue whose types have none takes
# the keyed jobs there too, after these (``CLAIM_*_STRAYS``, below).
# And under a lease (``jobs.flow.leases``): the lease's type storing its keys, only before
# its end. Leased jobs carry keys: read from the keyed indexes (``jobs_claim_keyed``, led by
# ``flow_queue``, or ``jobs_claim_keyed_any``, led by ``flow_due``), as flow control's
# candidates are, so the plain jobs of a mixed queue are not read past. MARK_CLAIMED stamps
# the jobs' start with the clock this read checked the lease's end against: before the end,
# which the lease's starts are recorded after (``leases.RATE_MARGIN``).
_LEASED = "\n   AND type = %s AND concurrency_key <=> %s AND rate_key <=> %s AND CURRENT_TIMESTAMP(6) < %s"
# The keyed jobs of one queue (``jobs_claim_keyed``) or of several (``jobs_claim_keyed_any``)
# in claim order, locked: ``{columns}`` of them, under the conditions ``{more}``.
_KEYED_ONE_QUEUE = """
SELECT {columns} FROM jobs_job FORCE INDEX (jobs_claim_keyed)
 WHERE flow_queue = %s AND run_at <= CURRENT_TIMESTAMP(6){more}
 ORDER BY priority, run_at, id
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
_KEYED_QUEUES = """
SELECT {columns} FROM jobs_job FORCE INDEX (jobs_claim_keyed_any)
 WHERE flow_due = 1 AND queue IN ({queues}) AND run_at <= CURRENT_TIMESTAMP(6){more}
 ORDER BY priority, run_at, id
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
CLAIM_ONE_QUEUE_LEASED = _KEYED_ONE_QUEUE.format(columns=_CLAIM_COLUMNS, more=_LEASED)
CLAIM_QUEUES_LEASED = _KEYED_QUEUES.format(columns=_CLAIM_COLUMNS, more=_LEASED, queues="{queues}")
# The keyed jobs of queues whose types have no limits in this worker's code, when the plain
# claim came back short: claimed as plain jobs, as they were before migration 0027.
CLAIM_ONE_QUEUE_STRAYS = _KEYED_ONE_QUEUE.format(columns=_CLAIM_COLUMNS, more="")
CLAIM_QUEUES_STRAYS = _KEYED_QUEUES.format(columns=_CLAIM_COLUMNS, more="", queues="{queues}")
MARK_CLAIMED = """
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %s,
       started_at = %s, heartbeat_at = %s,
       finished_at = NULL, progress = NULL, progress_message = ''
 WHERE id IN ({ids})
"""
#: How many claimed jobs a worker keeps the due time and start of, for their acknowledgement
#: (``MariaDBDriver.complete_many``): more than a worker holds at once (its children and its
#: prefetched jobs). A job that ends another way (a failure, a retry, a child's own
#: acknowledgement) leaves its entry until the oldest are dropped; a job dropped is read back.
CLAIMED_KEPT = 4_096

# The acknowledgement, one fenced UPDATE in autocommit: the rows still running under this
# worker at the attempt each was claimed for become succeeded; each row is locked only
# while the statement runs. The fence is written per attempt number (``{fences}``: one
# ``(id IN (…) AND attempts = %s)`` for each, nearly always one), where a list of (id,
# attempts) pairs was compared row by row with every pair: a quarter of the statement's
# time for 128 jobs. Its row count (matched rows: Django connects with FOUND_ROWS) says
# whether every job applied, the usual case. When some did not (a late result of a reaped
# job, an acknowledgement written twice) but some did, APPLIED_DONE reads which ones: the
# statement's moment is kept in a session variable as it is written to finished_at of each
# row it changes, and a row of this worker finished at that very microsecond was finished
# by it.
COMPLETE = """
UPDATE jobs_job
   SET status = 'succeeded', finished_at = (@jobs_acknowledged := CURRENT_TIMESTAMP(6)),
       progress = 100, error = ''
 WHERE ({fences}) AND status = 'running' AND locked_by = %s
"""
_FENCE = "(id IN ({ids}) AND attempts = %s)"


def as_stored(moment: datetime) -> datetime:
    """``moment`` as the columns hold it, for a statement's parameter: UTC without a zone."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def _locked(
    cursor: Any, one: str, many: str, queues: Sequence[str], params: Sequence[Any], limit: int
) -> list[tuple[Any, ...]]:
    """The rows of a claim's locking read: statement ``one`` for one queue, ``many`` (its
    ``{queues}`` filled in) for several; ``params`` between the queues and the limit."""
    if len(queues) == 1:
        cursor.execute(one, [queues[0], *params, limit])
    else:
        cursor.execute(many.format(queues=placeholders(queues)), [*queues, *params, limit])
    return list(cursor.fetchall())


def fenced(done: Sequence[tuple[int, int]]) -> tuple[str, list[Any]]:
    """COMPLETE's ``{fences}`` for these (id, attempt) pairs, and their parameters."""
    by_attempt: dict[int, list[int]] = {}
    for job_id, attempt in done:
        by_attempt.setdefault(attempt, []).append(job_id)
    fences = " OR ".join(_FENCE.format(ids=placeholders(ids)) for ids in by_attempt.values())
    return fences, [value for attempt, ids in by_attempt.items() for value in (*ids, attempt)]


# The moment COMPLETE wrote, when every job applied and the worker kept each one's due time
# and start from its claim: the rollup's times without reading the rows back.
ACKNOWLEDGED_AT = "SELECT CAST(@jobs_acknowledged AS DATETIME(6))"
# The jobs COMPLETE changed, read back (see above), when some did not apply or a claim's
# times were not kept: with what the rollup of finished tries needs of each (``jobs.rollup``),
# each one's queue, type, wait (due to started) and run (started to finished) in seconds.
# One primary-key read a batch, MariaDB having no UPDATE … RETURNING.
APPLIED_DONE = """
SELECT id, queue, type,
       TIMESTAMPDIFF(MICROSECOND, run_at, started_at) / 1e6,
       TIMESTAMPDIFF(MICROSECOND, started_at, finished_at) / 1e6
  FROM jobs_job
 WHERE id IN ({ids}) AND status = 'succeeded' AND locked_by = %s AND finished_at = @jobs_acknowledged
"""

# --- jobs due later ---

# The promotion of jobs due later that are due now, in one short transaction: lock up to
# %s of them, earliest first, from the front of ``jobs_due_later`` (their ``due_at``,
# NULL for every other job, so the range holds only them), skipping rows another worker's
# promotion holds; clear their flag by primary key (which moves them into the claims'
# range of ``jobs_claim`` and ``jobs_claim_any``); commit. Workers poll here, so nothing
# is notified: the promoting worker claims them itself, the others at their next poll.
PROMOTE_DUE = """
SELECT id, queue FROM jobs_job FORCE INDEX (jobs_due_later)
 WHERE due_at <= CURRENT_TIMESTAMP(6)
 ORDER BY due_at
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
MARK_PROMOTED = "UPDATE jobs_job SET due_later = FALSE WHERE id IN ({ids})"
# Seconds until the next job due later is due, by the server's clock: the first non-NULL
# entry of ``jobs_due_later`` (NULL when none waits), read after the promotion committed.
# Zero or less when one is due already (it came due since, or another worker's promotion
# holds it): the worker then looks again shortly. Locks nothing.
NEXT_DUE_IN = """
SELECT TIMESTAMPDIFF(MICROSECOND, CURRENT_TIMESTAMP(6), MIN(due_at)) / 1000000 FROM jobs_job
"""

# --- flow control (``jobs.store.claim_flowed``): the claim of jobs with limits, in steps ---

# Its candidates: lock up to N due, queued rows of the queues in claim order, skipping rows
# another worker holds and the jobs of keys known to be at their limit, until the claim's
# transaction ends. ``_KEYED``: only the jobs with a limit key, from ``jobs_claim_keyed``
# (on ``flow_queue``, NULL for every other row), for a queue whose other jobs keep the
# plain claim; the others serve a queue with limits of its own, from the claim indexes.
_FLOW_EXCLUDED = """
   AND (concurrency_key IS NULL OR concurrency_key NOT IN ({full}))
   AND (rate_key IS NULL OR rate_key NOT IN ({waiting}))"""
_CANDIDATE_COLUMNS = "id, type, queue, concurrency_key, rate_key"
# The candidates of a claim within the gates' spares: what the worker needs of each too.
_SPARED_COLUMNS = "id, type, queue, payload, attempts, max_attempts, step_id, concurrency_key, rate_key"
# A queue with limits of its own: its plain jobs (``jobs_claim``/``_any``) and its keyed ones
# (``jobs_claim_keyed``/``_any``), each read in claim order and locked, merged in that order
# (a read's rows past the merged ``limit`` stay locked until the claim's transaction ends).
_MERGED = """
({plain})
UNION ALL
({keyed})
 ORDER BY priority, run_at, id
 LIMIT %s
"""
_MERGED_PART = {"columns": "{columns}, priority, run_at", "more": "{excluded}", "queues": "{queues}"}
FLOW_CANDIDATES_PLAIN_ONE_QUEUE = _PLAIN_ONE_QUEUE.format(**_MERGED_PART).strip()
FLOW_CANDIDATES_PLAIN_QUEUES = _PLAIN_QUEUES.format(**_MERGED_PART).strip()
FLOW_CANDIDATES_ONE_QUEUE = _MERGED.format(
    plain=FLOW_CANDIDATES_PLAIN_ONE_QUEUE, keyed=_KEYED_ONE_QUEUE.format(**_MERGED_PART).strip()
)
FLOW_CANDIDATES_QUEUES = _MERGED.format(
    plain=FLOW_CANDIDATES_PLAIN_QUEUES, keyed=_KEYED_QUEUES.format(**_MERGED_PART).strip()
)
FLOW_CANDIDATES_KEYED_ONE_QUEUE = _KEYED_ONE_QUEUE.format(columns="{columns}", more="{excluded}")
FLOW_CANDIDATES_KEYED_QUEUES = _KEYED_QUEUES.format(columns="{columns}", more="{excluded}", queues="{queues}")

# Under the gates' locks: the database's clock (µs since the epoch; NOW(6) is this
# statement's start, after the locks were granted) and the running jobs of each
# concurrency key (``jobs_running_key``: running_key) and of each queue with a
# concurrency limit (the running rows, ``jobs_running``). A consistent read: locks nothing.
FLOW_NOW = "SELECT 'now', NULL, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"
FLOW_RUNNING_KEYS = """
SELECT 'key', running_key, COUNT(*) FROM jobs_job FORCE INDEX (jobs_running_key)
 WHERE running_key IN ({keys})
 GROUP BY running_key"""
# A type-wide key's running jobs, which ``running_key`` leaves out (migration 0024): the
# running rows, through ``jobs_running`` (status first).
FLOW_RUNNING_TYPE_KEYS = """
SELECT 'key', concurrency_key, COUNT(*) FROM jobs_job FORCE INDEX (jobs_running)
 WHERE status = 'running' AND concurrency_key IN ({keys})
 GROUP BY concurrency_key"""
FLOW_RUNNING_QUEUES = """
SELECT 'queue', queue, COUNT(*) FROM jobs_job FORCE INDEX (jobs_running)
 WHERE status = 'running' AND queue IN ({queues})
 GROUP BY queue"""

# A claim within the spares of its type and queue gates (``jobs.flow.spare``): the gates
# locked in key order, with what they store and the clock read as each was locked
# (SYSDATE, unlike NOW, is the moment it runs): claims of the same gates take turns here.
FLOW_LOCK_SPARES = """
SELECT `key`, recent, spare_slots, spare_starts, spare_until, spare_basis, spare_pending_at, spare_pending,
       CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)
  FROM jobs_flow_gate WHERE `key` IN ({keys}) ORDER BY `key` FOR UPDATE"""

# Marks the admitted candidates (locked by this transaction) running, started at the
# clock the decision was made at, through the primary key; then they are read back
# (FLOW_CLAIMED_ROWS) in the same transaction.
FLOW_MARK_CLAIMED = """
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %s,
       started_at = %s, heartbeat_at = %s, finished_at = NULL, progress = NULL, progress_message = ''
 WHERE id IN ({ids})
"""
FLOW_CLAIMED_ROWS = f"SELECT {_CLAIMED_COLUMNS} FROM jobs_job WHERE id IN ({{ids}})"

# What a round stores of the (locked) gates (``GateSave``: windows, spares), in one statement.
FLOW_SAVE_GATES = """
UPDATE jobs_flow_gate
   SET recent = CASE `key` {cases} END, spare_slots = CASE `key` {cases} END,
       spare_starts = CASE `key` {cases} END, spare_until = CASE `key` {cases} END,
       spare_basis = CASE `key` {cases} END, spare_pending_at = NULL, spare_pending = NULL,
       leases = COALESCE(CASE `key` {cases} END, leases)
 WHERE `key` IN ({keys})"""

# --- enqueue ---

# Bulk enqueue: one multi-row INSERT per batch. mysqlclient folds executemany into one
# statement only when every value is a placeholder, so the constants travel as parameters
# (``INSERT_MANY_CONSTANTS``), and the times come from the caller.
# IGNORE turns a duplicate active dedupe key (the unique index above) into a skipped row;
# every other value was checked before (``jobs.validation``), so it hides nothing else.
INSERT_MANY = """
INSERT IGNORE INTO jobs_job (type, queue, priority, payload, dedupe_key, run_at, due_later,
                             max_attempts, created_at, traceparent, concurrency_key, rate_key,
                             status, attempts,
                             progress_message, error, message, earlier_attempts)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
INSERT_MANY_CONSTANTS = ("queued", 0, "", "", "", 0)

# --- workflows (``jobs.workflow``) ---

# A released step's job: the step's own values (checked when the workflow started), queued,
# due after its delay (due later, until a worker promotes it, when it has one), linked to its
# step, with its workflow's trace context (``jobs.tracing``; NULL when none, see below). IGNORE
# makes a second job of a step (the unique
# index ``jobs_step_job``) or one whose dedupe key an active job holds (``jobs_dedupe_active``)
# a skipped row; that step waits for the key (``jobs.workflow.progress.release_blocked``).
# Under READ COMMITTED the SELECT reads the steps and the workflow without locking them; the
# INSERT locks only its new rows.
_STEP_JOB = """
INSERT IGNORE INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, due_later,
                             attempts, max_attempts, created_at, progress_message, error, message,
                             earlier_attempts, step_id, traceparent, concurrency_key, rate_key)
SELECT s.type, s.queue, s.priority, 'queued', s.payload, s.dedupe_key,
       CURRENT_TIMESTAMP(6) + INTERVAL ROUND(COALESCE(s.delay, 0) * 1000000) MICROSECOND,
       COALESCE(s.delay, 0) > 0, 0, s.max_attempts, CURRENT_TIMESTAMP(6), '', '', '', 0, s.id,
       {traceparent}, s.concurrency_key, s.rate_key
  FROM jobs_workflow_step AS s {join}
 WHERE {condition}
 ORDER BY s.id
"""
# The trace context a released step's job carries, its workflow's: read by the workflow's
# primary key, once a statement where the statement's steps are of one workflow (its start, a
# step's successors), per step where they may not be (the steps' rows hold no copy).
WORKFLOW_TRACEPARENT = "(SELECT f.traceparent FROM jobs_workflow AS f WHERE f.id = %(workflow)s)"
SUCCESSORS_TRACEPARENT = """(SELECT f.traceparent FROM jobs_workflow AS f
         JOIN jobs_workflow_step AS u ON u.workflow_id = f.id WHERE u.id = %(step)s)"""
STEPS_TRACEPARENT = "(SELECT f.traceparent FROM jobs_workflow AS f WHERE f.id = s.workflow_id)"

# A workflow's steps (as it starts, or steps a running one adds): one multi-row INSERT
# (mysqlclient folds executemany into one statement per packet; the values are
# placeholders), then their ids read back by their positions, the workflow's newest, from
# the index ``jobs_workflow_step_graph`` alone (it leads with the workflow and holds the
# primary key). Locks only the new rows.
INSERT_STEPS = """
INSERT INTO jobs_workflow_step (workflow_id, position, name, type, queue, priority, payload,
                                dedupe_key, concurrency_key, rate_key, max_attempts, delay,
                                results_as, status, pending, depth, message, added_by)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
STEP_IDS = "SELECT id, position FROM jobs_workflow_step WHERE workflow_id = %s AND position BETWEEN %s AND %s"
# The edges between them: one multi-row INSERT.
INSERT_EDGES = "INSERT INTO jobs_workflow_edge (upstream_id, downstream_id) VALUES (%s, %s)"

# A starting workflow's first steps (inserted as released), through the index
# ``jobs_workflow_step_graph``, which leads with the workflow.
RELEASE_WORKFLOW = _STEP_JOB.format(
    traceparent=WORKFLOW_TRACEPARENT,
    join="",
    condition="s.workflow_id = %(workflow)s AND s.status = 'released'",
)
# Released steps whose job waited for its dedupe key, by primary key.
RELEASE_STEPS = _STEP_JOB.format(
    traceparent=STEPS_TRACEPARENT,
    join="",
    condition="s.id IN ({ids}) AND s.status = 'released'",
)

# A step succeeded, in two statements whatever the number of its successors. The first
# counts down every step that waits for it (the edges' primary key, upstream first, finds
# them) and releases those that wait for nothing more: MariaDB assigns from left to right,
# so the status comes first, reading the count as it was. It locks those steps (by primary
# key) until the step's transaction commits; the caller holds the workflow's row. The
# second adds the jobs of the steps it released.
COUNT_DOWN_SUCCESSORS = """
UPDATE jobs_workflow_step
   SET status = IF(pending = 1 AND status = 'waiting', 'released', status), pending = pending - 1
 WHERE id IN (SELECT downstream_id FROM jobs_workflow_edge WHERE upstream_id = %s)
"""
RELEASE_SUCCESSORS = _STEP_JOB.format(
    traceparent=SUCCESSORS_TRACEPARENT,
    join="JOIN jobs_workflow_edge AS e ON e.downstream_id = s.id",
    condition="e.upstream_id = %(step)s AND s.status = 'released' AND s.pending = 0",
)

# --- timers ---

# A timer step's guard: a named lock of the session, taken without waiting (timeout 0),
# released after the step; if the process dies the session ends and the lock with it.
# Named locks are the server's, not a database's (PostgreSQL's advisory locks are per
# database), so the name carries the database's CRC: another database on the same server
# (staging beside production) runs its own steps. Names are at most 64 characters, so the
# step's name goes in as its CRC too.
_TIMER_STEP_LOCK = "CONCAT('jobs.timer:', CRC32(DATABASE()), ':', %s)"
TRY_LOCK_TIMER_STEP = f"SELECT GET_LOCK({_TIMER_STEP_LOCK}, 0)"
UNLOCK_TIMER_STEP = f"SELECT RELEASE_LOCK({_TIMER_STEP_LOCK})"
# Which session holds a step's lock (NULL when none does): for the tests and an operator.
TIMER_STEP_LOCK_HOLDER = f"SELECT IS_USED_LOCK({_TIMER_STEP_LOCK})"

# --- deduplicated enqueue ---

# Twins of one dedupe key inserted at once take turns on a named lock for their INSERT
# statement only. Where the unique index ``jobs_dedupe_active`` still holds a delete-marked
# entry of the key (a job of it that finished, not yet purged), InnoDB's duplicate check
# gives every inserter a shared lock on that entry and the gap after it, and two inserters
# that both go on to insert then wait on each other's gap lock: a deadlock, which rolls the
# loser's whole transaction back. One INSERT at a time, the second finds the first's new
# row and waits for it to commit (then it is a duplicate: the existing job is returned).
# Released after the statement, not the transaction: a twin never waits on a caller's
# transaction here, only on the row, as without the lock. Taken with a bound wait: a
# session that cannot get it inserts as it would without.
_DEDUPE_LOCK = "CONCAT('jobs.dedupe:', CRC32(DATABASE()), ':', %s)"
LOCK_DEDUPE_INSERT = f"SELECT GET_LOCK({_DEDUPE_LOCK}, %s)"
UNLOCK_DEDUPE_INSERT = f"SELECT RELEASE_LOCK({_DEDUPE_LOCK})"
#: Seconds an insert waits for its twin's turn before it goes ahead without it.
DEDUPE_LOCK_WAIT = 5

# --- admin page ---

# The admin's tile estimate for a status that holds more rows than the page counts: the
# optimiser's row estimate for the status, from a dive into the index ``jobs_running``
# (status, id, locked_by; migration 0026), named so that the estimate does not depend on the
# index the optimiser would pick. EXPLAIN runs nothing and locks nothing.
ESTIMATE_STATUS_ROWS = "EXPLAIN SELECT 1 FROM jobs_job FORCE INDEX (jobs_running) WHERE status = %s"
# InnoDB caps a range's estimate at half the table's rows, so the dive says "half the table"
# for the status that fills most of it (succeeded; a million rows read as 495,000). That
# status is then estimated as the table's rows (InnoDB's running count, which EXPLAIN gives
# for a whole-index scan) less the rows of the other statuses (two ranges of the same index,
# each under the cap).
ESTIMATE_TABLE_ROWS = "EXPLAIN SELECT 1 FROM jobs_job FORCE INDEX (jobs_running)"
ESTIMATE_OTHER_STATUS_ROWS = "EXPLAIN SELECT 1 FROM jobs_job FORCE INDEX (jobs_running) WHERE status <> %s"

# --- metrics ---

# The metrics' snapshot: its statements read from one consistent snapshot (REPEATABLE
# READ) and write nothing. Issued before the transaction's first read, it applies to that
# transaction only.
METRICS_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
# Its statement timeout, in seconds: a session variable (MariaDB has no transaction-local
# one), so the session's own value is kept in a user variable and put back when the
# measurement ends.
SWAP_STATEMENT_TIME = (
    "SET @jobs_statement_time = @@SESSION.max_statement_time, @@SESSION.max_statement_time = %s"
)
RESTORE_STATEMENT_TIME = "SET @@SESSION.max_statement_time = @jobs_statement_time"


def _float(value: Any) -> float | None:
    return None if value is None else float(value)  # a Decimal, from the division


def dedupe_lock_key(type_name: str, dedupe_key: str) -> int:
    """The number a dedupe key's insert lock name carries (see ``LOCK_DEDUPE_INSERT``)."""
    return zlib.crc32(f"{type_name}\0{dedupe_key}".encode())


def step_lock_key(name: str) -> int:
    """The number a timer step's lock name carries (see ``_TIMER_STEP_LOCK``)."""
    return zlib.crc32(name.encode())


# ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT: InnoDB rolled the transaction (or the statement) back.
CONFLICT_CODES = frozenset({1213, 1205})


class MariaDBDriver(OrmDriver):
    vendor = "mysql"

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        super().__init__(alias)
        # The plain claim's jobs by id: queue, type, due time and start, for their
        # acknowledgement (``complete_many``), at most ``CLAIMED_KEPT``.
        self._claimed: dict[int, tuple[str, str, datetime, datetime]] = {}
        # Where its plain claims stopped, to read on from (``read_positions``).
        self._positions = ReadPositions()

    def is_conflict(self, error: BaseException) -> bool:
        return bool(error.args) and error.args[0] in CONFLICT_CODES

    # The rollup's upsert (``add_to_rollup``) in MariaDB's words.
    ADD_TO_ROLLUP = """
INSERT INTO jobs_rollup (span, minute, queue, type, outcome, measure, bucket, tries)
VALUES {values}
    ON DUPLICATE KEY UPDATE tries = tries + VALUES(tries)
"""

    def session_mismatch(self) -> tuple[str, str] | None:
        with self.cursor() as cursor:
            cursor.execute(SESSION_AND_TABLE_COLLATIONS)
            found = cursor.fetchone()
        if found is None or found[0] == found[1]:
            return None
        return found[0], found[1]

    def prepare_session(self, connection: BaseDatabaseWrapper) -> None:
        # With USE_TZ, Django stores UTC in MariaDB's zone-less columns but leaves the
        # session in the server's time zone; the SQL above compares those columns with
        # CURRENT_TIMESTAMP, so every session speaks UTC (a project's own settings need not).
        if settings.USE_TZ:
            with connection.cursor() as cursor:
                cursor.execute(SESSION_UTC)

    def insert_one(self, fields: Mapping[str, Any], payload_text: str) -> Job | None:
        if fields["dedupe_key"] is None:
            return super().insert_one(fields, payload_text)
        key = dedupe_lock_key(fields["type"], fields["dedupe_key"])
        with self.cursor() as cursor:
            cursor.execute(LOCK_DEDUPE_INSERT, [key, DEDUPE_LOCK_WAIT])
            row = cursor.fetchone()
        try:
            return super().insert_one(fields, payload_text)
        finally:
            if row and row[0] == 1:
                with self.cursor() as cursor:
                    cursor.execute(UNLOCK_DEDUPE_INSERT, [key])

    def insert_many(self, batch: Batch) -> int:
        now = timezone.now()
        with self.cursor() as cursor:
            cursor.executemany(
                INSERT_MANY,
                [
                    (batch.type, batch.queue, batch.priority, text, key, batch.run_at or now,
                     batch.due_later, batch.max_attempts, now, batch.traceparent, concurrency_key, rate_key,
                     *INSERT_MANY_CONSTANTS)
                    for text, key, concurrency_key, rate_key in zip(
                        batch.payloads, batch.dedupe_keys, batch.concurrency_keys(), batch.rate_keys(),
                        strict=True,
                    )
                ],
            )  # fmt: skip
            return cursor.rowcount

    def claim(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        *,
        unkeyed: bool = False,
        with_rows: Sequence[str] = (),  # their tries read their rows (``task_try_rows``)
        leased: Leased | None = None,
    ) -> list[ClaimedJob]:
        # Two statements in one short transaction: the locking read, the UPDATE.
        with transaction.atomic(using=self.alias), self.cursor() as cursor:
            if leased is not None:
                until = as_stored(leased.until)
                lease = [leased.type, leased.concurrency_key, leased.rate_key, until]
                rows = _locked(cursor, CLAIM_ONE_QUEUE_LEASED, CLAIM_QUEUES_LEASED, queues, lease, limit)
            else:
                rows = self._read_plain(cursor, queues, limit)
                if not unkeyed and len(rows) < limit:  # then the keyed ones too, after them
                    rows += _locked(
                        cursor, CLAIM_ONE_QUEUE_STRAYS, CLAIM_QUEUES_STRAYS, queues, [], limit - len(rows)
                    )
            if not rows:
                return []
            ids = [row[0] for row in rows]
            started = max(row[-1] for row in rows)  # the clock of the read (the later one) that found them
            cursor.execute(MARK_CLAIMED.format(ids=placeholders(ids)), [worker, started, started, *ids])
        claimed = [ClaimedJob(*row[:7]) for row in rows]
        self._remember(claimed, [due for *_, due, _ in rows], started)
        return [job._replace(attempt=job.attempt + 1) for job in claimed]

    def _read_plain(self, cursor: Any, queues: Sequence[str], limit: int) -> list[tuple[Any, ...]]:
        """The plain jobs' locking read (``claim_ready``, 0027): on from where this worker's
        last claim of ``queues`` stopped while that position is fresh, then the jobs up to it
        if that came back short; from the head otherwise. Keeps where it stopped."""
        position = self._positions.position(queues)
        if position is None:
            rows = _locked(cursor, CLAIM_ONE_QUEUE, CLAIM_QUEUES, queues, [], limit)
            from_head = True
        else:
            after = position.params()
            rows = _locked(cursor, CLAIM_ONE_QUEUE_AFTER, CLAIM_QUEUES_AFTER, queues, after, limit)
            from_head = len(rows) < limit
            if from_head:  # the jobs ahead of the position too, before the ones after it
                ahead = _locked(
                    cursor, CLAIM_ONE_QUEUE_UP_TO, CLAIM_QUEUES_UP_TO, queues, after, limit - len(rows)
                )
                rows = ahead + rows
        taken = [Position(row[7], row[8], row[0]) for row in rows]
        self._positions.claimed(queues, limit, taken, from_head=from_head)
        return rows

    def _remember(self, jobs: Sequence[ClaimedJob], due: Sequence[datetime], started: datetime) -> None:
        """Keep what the acknowledgement of these claimed jobs needs, the oldest dropped
        past ``CLAIMED_KEPT``."""
        kept = self._claimed
        for job, due_at in zip(jobs, due, strict=True):
            kept.pop(job.id, None)  # (a job claimed again moves to the newest end)
            kept[job.id] = (job.queue, job.type, due_at, started)
        while len(kept) > CLAIMED_KEPT:
            del kept[next(iter(kept))]

    def promote_due(self, limit: int) -> Promoted:
        with transaction.atomic(using=self.alias), self.cursor() as cursor:
            cursor.execute(PROMOTE_DUE, [limit])
            rows = cursor.fetchall()
            if rows:
                ids = [job_id for job_id, _ in rows]
                cursor.execute(MARK_PROMOTED.format(ids=placeholders(ids)), ids)
        with self.cursor() as cursor:
            cursor.execute(NEXT_DUE_IN)
            found = cursor.fetchone()
        next_due_in = None if found is None or found[0] is None else float(found[0])
        return Promoted(len(rows), sorted({queue for _, queue in rows}), next_due_in)

    def flow_candidates(
        self,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool = False,
    ) -> list[Candidate]:
        statement, params = flow_candidates_statement(queues, limit, full_keys, waiting_keys, keyed_only)
        return [Candidate(*row[:5]) for row in self.execute(statement, params)]

    def flow_take_spared(self, plan: SparedPlan) -> list[ClaimedJob] | None:
        statement, params = flow_candidates_statement(
            plan.queues, plan.limit, plan.full_keys, plan.waiting_keys, plan.keyed_only, _SPARED_COLUMNS
        )
        with transaction.atomic(using=self.alias), self.cursor() as cursor:
            # The gates first, in key order, as every claim locks them; the clock once they are.
            cursor.execute(FLOW_LOCK_SPARES.format(keys=placeholders(plan.gates)), list(plan.gates))
            locked = cursor.fetchall()
            if not locked:
                return None
            held = {
                key: GateSave(with_pending(recent, pending_at, pending), *spare)
                for key, recent, *spare, pending_at, pending, _ in locked
            }
            now = max(int(row[-1]) for row in locked)
            cursor.execute(statement, params)
            rows = cursor.fetchall()
            found = [Candidate(row[0], row[1], row[2], row[7], row[8]) for row in rows]
            spent = spare.spend(plan, held, found, now)
            if spent is None:
                transaction.set_rollback(True, using=self.alias)  # the candidates go back as they were
                return None
            if rows:
                stamp = as_stored(moment(now))
                ids = [row[0] for row in rows]
                cursor.execute(
                    FLOW_MARK_CLAIMED.format(ids=placeholders(ids)), [plan.worker, stamp, stamp, *ids]
                )
            if spent:
                self.flow_save_gates(spent)
        return [
            ClaimedJob(job_id, type_name, payload, attempts + 1, max_attempts, queue, step_id)
            for job_id, type_name, queue, payload, attempts, max_attempts, step_id, *_ in rows
        ]

    def flow_running(self, keys: Sequence[str], queues: Sequence[str]) -> Running:
        parts, params = [FLOW_NOW], []
        type_keys, own_keys = split_type_keys(keys)
        for statement, chosen in ((FLOW_RUNNING_KEYS, own_keys), (FLOW_RUNNING_TYPE_KEYS, type_keys)):
            if chosen:
                parts.append(statement.format(keys=placeholders(chosen)))
                params += chosen
        if queues:
            parts.append(FLOW_RUNNING_QUEUES.format(queues=placeholders(queues)))
            params += list(queues)
        by_key: dict[str, int] = {}
        by_queue: dict[str, int] = {}
        now = 0
        for kind, name, count in self.execute("\nUNION ALL\n".join(parts), params):
            if kind == "now":
                now = int(count)
            elif kind == "key":
                by_key[name] = int(count)
            else:
                by_queue[name] = int(count)
        return Running(now, by_key, by_queue)

    def flow_mark_claimed(
        self,
        worker: str,
        ids: Sequence[int],
        at: datetime | None,
        rekeyed: Mapping[int, tuple[str | None, str | None]],
    ) -> list[ClaimedJob]:
        for job_id, (concurrency_key, rate_key) in rekeyed.items():  # rare: rows older than a limit
            self.jobs().filter(id=job_id).update(concurrency_key=concurrency_key, rate_key=rate_key)
        # No clock read (no gate): the statement's.
        stamp = as_stored(at or timezone.now())
        with self.cursor() as cursor:
            cursor.execute(FLOW_MARK_CLAIMED.format(ids=placeholders(ids)), [worker, stamp, stamp, *ids])
            cursor.execute(FLOW_CLAIMED_ROWS.format(ids=placeholders(ids)), list(ids))
            rows = cursor.fetchall()
        order = {job_id: position for position, job_id in enumerate(ids)}
        return sorted((ClaimedJob(*row) for row in rows), key=lambda job: order[job.id])

    def flow_save_gates(self, gates: Mapping[str, GateSave]) -> None:
        cases = " ".join(["WHEN %s THEN %s"] * len(gates))
        params: list[object] = []
        for column in zip(*gates.values(), strict=True):  # a CASE per column of GateSave
            for key, value in zip(gates, column, strict=True):
                params += [key, value]
        self.execute(FLOW_SAVE_GATES.format(cases=cases, keys=placeholders(list(gates))), [*params, *gates])

    def complete_many(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None
    ) -> list[Done]:
        kept = [self._claimed.pop(job_id, None) for job_id, _ in done]
        if results is not None:
            return super().complete_many(worker, done, results)
        # One statement, then the statement's moment, whatever the batch's size; the jobs
        # read back only when the fence dropped some or the claim's times were not kept.
        ids = [job_id for job_id, _ in done]
        fences, params = fenced(done)
        with self.cursor() as cursor:
            cursor.execute(COMPLETE.format(fences=fences), [*params, worker])
            applied = cursor.rowcount
            if applied == 0:  # (and the variable still holds an earlier statement's moment)
                return []
            times = [job for job in kept if job is not None]
            if applied == len(ids) == len(times):
                cursor.execute(ACKNOWLEDGED_AT)
                (finished,) = cursor.fetchone()
                return [
                    Done(
                        job_id,
                        queue,
                        type_name,
                        (started - due).total_seconds(),
                        (finished - started).total_seconds(),
                    )
                    for job_id, (queue, type_name, due, started) in zip(ids, times, strict=True)
                ]
            # Which applied, with their times for the rollup: one read (see APPLIED_DONE).
            cursor.execute(APPLIED_DONE.format(ids=placeholders(ids)), [*ids, worker])
            return [
                Done(job_id, queue, type_name, _float(waited), _float(ran))
                for job_id, queue, type_name, waited, ran in cursor.fetchall()
            ]

    def insert_steps(self, workflow_id: int, rows: Sequence[StepRow], added_by: int | None) -> list[int]:
        if not rows:
            return []
        with self.cursor() as cursor:
            cursor.executemany(
                INSERT_STEPS,
                [
                    (workflow_id, row.position, row.name, row.type, row.queue, row.priority, row.payload,
                     row.dedupe_key, row.concurrency_key, row.rate_key, row.max_attempts, row.delay,
                     row.results_as, row.status, row.pending, row.depth, "", added_by)
                    for row in rows
                ],
            )  # fmt: skip
            positions = [row.position for row in rows]
            cursor.execute(STEP_IDS, [workflow_id, min(positions), max(positions)])
            found = {position: step_id for step_id, position in cursor.fetchall()}
        return [found[row.position] for row in rows]

    def insert_edges(self, pairs: Sequence[tuple[int, int]]) -> None:
        if pairs:
            with self.cursor() as cursor:
                cursor.executemany(INSERT_EDGES, list(pairs))

    def release_workflow(self, workflow_id: int) -> int:
        with self.cursor() as cursor:
            cursor.execute(RELEASE_WORKFLOW, {"workflow": workflow_id})
            return cursor.rowcount

    def release_steps(self, step_ids: Sequence[int]) -> int:
        if not step_ids:
            return 0
        with self.cursor() as cursor:
            cursor.execute(RELEASE_STEPS.format(ids=placeholders(step_ids)), list(step_ids))
            return cursor.rowcount

    def release_successors(self, step_id: int) -> int:
        with self.cursor() as cursor:
            cursor.execute(COUNT_DOWN_SUCCESSORS, [step_id])
            cursor.execute(RELEASE_SUCCESSORS, {"step": step_id})
            return cursor.rowcount

    @contextmanager
    def try_lock_steps(self, session: BaseDatabaseWrapper, names: Sequence[str]) -> Iterator[bool]:
        taken: list[int] = []
        try:
            with session.cursor() as cursor:
                for name in names:
                    key = step_lock_key(name)
                    cursor.execute(TRY_LOCK_TIMER_STEP, [key])
                    row = cursor.fetchone()
                    if not (row and row[0] == 1):
                        break
                    taken.append(key)
            yield len(taken) == len(names)
        finally:
            with session.cursor() as cursor:
                for key in taken:
                    cursor.execute(UNLOCK_TIMER_STEP, [key])

    def due(self, now: datetime) -> Q:
        stamp = as_stored(now)
        return Q(RawSQL(DUE_BY, [stamp, stamp], output_field=BooleanField()))

    def failed(self) -> Q:
        return Q(RawSQL(FAILED_LISTED, [], output_field=BooleanField()))  # led by ``failed`` (0026)

    def estimate_rows(self, status: str) -> int:
        rows = self._explained_rows(ESTIMATE_STATUS_ROWS, [status])
        total = self._explained_rows(ESTIMATE_TABLE_ROWS, [])
        if rows * 2 + 1 >= total:  # InnoDB's cap (half the table, rounded down): count the others
            others = self._explained_rows(ESTIMATE_OTHER_STATUS_ROWS, [status])
            rows = max(rows, total - others)
        return rows

    def _explained_rows(self, statement: str, params: list[Any]) -> int:
        """The ``rows`` column of EXPLAIN of a one-table statement."""
        with self.cursor() as cursor:
            cursor.execute(statement, params)
            names = [column[0] for column in cursor.description]
            found = cursor.fetchone()
        return int(found[names.index("rows")] or 0) if found else 0

    @contextmanager
    def metrics_snapshot(self, timeout_ms: int) -> Iterator[None]:
        # The isolation level is set for the transaction about to start, and the timeout
        # (a session variable) is put back as it was when the transaction ends.
        timeout = getattr(self.connection, "mysql_is_mariadb", False)  # MySQL 8 has no max_statement_time
        with transaction.atomic(using=self.alias):
            with self.cursor() as cursor:
                cursor.execute(METRICS_SNAPSHOT)
                if timeout:
                    cursor.execute(SWAP_STATEMENT_TIME, [timeout_ms / 1000])
            try:
                yield
            finally:
                if timeout:
                    with self.cursor() as cursor:
                        cursor.execute(RESTORE_STATEMENT_TIME)


def flow_candidates_statement(
    queues: Sequence[str],
    limit: int,
    full_keys: Sequence[str],
    waiting_keys: Sequence[str],
    keyed_only: bool,
    columns: str = _CANDIDATE_COLUMNS,
) -> tuple[str, list[Any]]:
    """The candidates' statement for these queues and the keys left out, reading ``columns``
    of each (then, from a queue with limits of its own, its priority and run_at), and its
    parameters."""
    excluded = ""
    if full_keys or waiting_keys:  # NOT IN () is no SQL: a key no job has stands in
        excluded = _FLOW_EXCLUDED.format(
            full=placeholders(full_keys or [""]), waiting=placeholders(waiting_keys or [""])
        )
    excluded_params = [*(full_keys or [""]), *(waiting_keys or [""])] if excluded else []
    one = len(queues) == 1
    if keyed_only:
        template = FLOW_CANDIDATES_KEYED_ONE_QUEUE if one else FLOW_CANDIDATES_KEYED_QUEUES
    else:
        template = FLOW_CANDIDATES_ONE_QUEUE if one else FLOW_CANDIDATES_QUEUES
    statement = template.format(
        columns=columns, excluded=excluded, queues="" if one else placeholders(queues)
    )
    read = [*queues, *excluded_params, limit]  # one read's
    return statement, read if keyed_only else [*read, *read, limit]
