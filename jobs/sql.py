"""The raw statements of the hot path, PostgreSQL only, kept in one place.

Each one replaces two or three ORM round trips (select ids, update, re-read) with a single
statement; ``bench/throughput.py`` measures the difference. Everything else in the engine
goes through the ORM. ``jobs.store`` picks these when the connection is PostgreSQL.
"""

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

# Locks up to %(limit)s due, queued rows of the worker's queues in claim order, skipping
# rows another worker holds, and marks them running under this worker in the same
# statement, so the lock lives only as long as this one UPDATE. A one-queue lane is served
# by the partial index ``jobs_claim``, a lane of several queues by ``jobs_claim_any``; both
# are read in order, so the cost does not grow with the backlog. The ids are gathered into
# an array first (an InitPlan), so even the generic plan of the prepared statement reaches
# the rows through the primary key rather than joining against the whole table. The
# payload goes out as text: the child process parses it. Each row's queue goes out too: a
# lane's fair share counts its running and buffered jobs by it. RETURNING has no order of
# its own, so the outer SELECT hands the batch out in claim order.
_CLAIM = """
WITH claimed AS (
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %(worker)s,
       started_at = now(), heartbeat_at = now(), finished_at = NULL,
       progress = NULL, progress_message = ''
 WHERE id = ANY(ARRAY(
        SELECT id FROM jobs_job
         WHERE status = 'queued' AND {queue_condition} AND run_at <= now()
         ORDER BY priority, run_at, id
         LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED))
RETURNING id, type, payload::text AS payload, attempts, max_attempts, queue, priority, run_at
)
SELECT id, type, payload, attempts, max_attempts, queue FROM claimed ORDER BY priority, run_at, id
"""
CLAIM_ONE_QUEUE = _CLAIM.format(queue_condition="queue = %(queue)s")
CLAIM_QUEUES = _CLAIM.format(queue_condition="queue = ANY(%(queues)s::varchar[])")

# Marks many jobs succeeded in one statement, fenced: a row counts only while it is still
# running under this worker and the same attempt (a reaped job's late result is dropped).
# Each id's attempt is looked up by its position in the array, not by joining an unnest:
# the generic plan of a join would compare every row with every pair.
COMPLETE = """
UPDATE jobs_job AS j
   SET status = 'succeeded', finished_at = now(), progress = 100, error = ''
 WHERE j.id = ANY(%(ids)s::bigint[])
   AND j.attempts = (%(attempts)s::int[])[array_position(%(ids)s::bigint[], j.id)]
   AND j.status = 'running' AND j.locked_by = %(worker)s
RETURNING j.id
"""

# COMPLETE for jobs that return a result (django.tasks tasks, ``jobs.backends``): the same
# fence and the same lookup by position, plus each job's result (JSON text) stored with it.
# Jobs without a result never take this statement, so the common acknowledgement above
# carries no result column at all.
COMPLETE_WITH_RESULTS = """
UPDATE jobs_job AS j
   SET status = 'succeeded', finished_at = now(), progress = 100, error = '',
       result = ((%(results)s::text[])[array_position(%(ids)s::bigint[], j.id)])::jsonb
 WHERE j.id = ANY(%(ids)s::bigint[])
   AND j.attempts = (%(attempts)s::int[])[array_position(%(ids)s::bigint[], j.id)]
   AND j.status = 'running' AND j.locked_by = %(worker)s
RETURNING j.id
"""

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

# --- enqueue, notify and timers -------------------------------------------------------------

# Enqueue of one job. A duplicate active dedupe key inserts nothing and returns no row;
# the caller then looks up the job that holds the key. The conflict is found in the
# partial unique index ``jobs_dedupe_active`` (type, dedupe_key of queued and running
# rows). The statement locks only its new row; a twin holding the same key in a
# transaction not yet committed makes it wait for that transaction, so only one inserts.
INSERT_ONE = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at,
                      attempts, max_attempts, progress_message, error, message)
VALUES (%(type)s, %(queue)s, %(priority)s, 'queued', %(payload)s::jsonb, %(dedupe_key)s,
        COALESCE(%(run_at)s::timestamptz, now()), 0, %(max_attempts)s, '', '', '')
    ON CONFLICT (type, dedupe_key) WHERE status IN ('queued', 'running') AND dedupe_key IS NOT NULL
    DO NOTHING
RETURNING id, run_at, created_at
"""

# Bulk enqueue: one INSERT for a whole batch of payloads (given as JSON text). The partial
# unique index ``jobs_dedupe_active`` turns a duplicate active dedupe key into a no-op;
# like INSERT_ONE it locks only the rows it adds.
INSERT_MANY = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at,
                      attempts, max_attempts, progress_message, error, message)
SELECT %(type)s, %(queue)s, %(priority)s, 'queued', item.payload::jsonb, item.dedupe_key,
       COALESCE(%(run_at)s, now()), 0, %(max_attempts)s, '', '', ''
  FROM unnest(%(payloads)s::text[], %(dedupe_keys)s::text[]) AS item(payload, dedupe_key)
    ON CONFLICT (type, dedupe_key) WHERE status IN ('queued', 'running') AND dedupe_key IS NOT NULL
    DO NOTHING
"""

# Enqueue wakes idle workers: a statement-level trigger sends one NOTIFY per queue that
# received due jobs. It reads only the statement's new rows (the transition table), so it
# needs no index and locks nothing. PostgreSQL delivers the notice at commit, so a
# rolled-back enqueue wakes no one.
CREATE_NOTIFY_TRIGGER = f"""
CREATE OR REPLACE FUNCTION jobs_notify_enqueued() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', queue)
       FROM (SELECT DISTINCT queue FROM new_jobs
              WHERE status = 'queued' AND run_at <= now()) AS due;
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

# A timer step's guard (``jobs.timers``): a transaction-level advisory lock on the step's
# 32-bit key, taken without waiting, so a second run of the same step at the same moment
# (two cron hosts, cron and django-q2) skips it instead of doing the work twice. It locks
# no row and no table, and needs no index. It is held by a transaction left open on a
# session of its own while the step runs, and ends with that transaction (or the session,
# if the process dies): never with a server session that a transaction pooler hands on.
TRY_LOCK_TIMER_STEP = "SELECT pg_try_advisory_xact_lock(%s)"

# --- metrics ---

# The metrics' snapshot (``jobs.metrics.measure``), on PostgreSQL and MariaDB: its
# statements read from one consistent snapshot (REPEATABLE READ) and write nothing. Issued
# before the transaction's first read, it applies to that transaction only.
METRICS_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
# Its statement timeout on PostgreSQL: set_config(..., true) is SET LOCAL, so it ends with
# the transaction.
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

# --- MariaDB (and MySQL 8) ---
#
# No partial indexes, no UPDATE … RETURNING, no LISTEN/NOTIFY, no advisory locks. The
# schema below replaces the model's partial indexes (migration 0010); ``jobs.store`` runs
# the claim as a short transaction of three statements; workers poll; timers take GET_LOCK.

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
MARIADB_SCHEMA = (
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
MARIADB_SCHEMA_UNDO = (
    *(
        f"ALTER TABLE jobs_job DROP INDEX {name}, ADD INDEX {name} ({columns})"
        for name, columns in _DJANGO_SHAPES.items()
    ),
    "DROP INDEX jobs_failed_list ON jobs_job",
    "DROP INDEX jobs_dedupe_active ON jobs_job",
    "ALTER TABLE jobs_job DROP COLUMN dedupe_active",
)

# Every session of the engine speaks UTC (``jobs.apps``): Django stores UTC in the datetime
# columns, and the statements below compare them with CURRENT_TIMESTAMP, the session's time.
MARIADB_SESSION_UTC = "SET time_zone = '+00:00'"

# The claim, first statement: locks up to %(limit)s due, queued rows of the lane's queues in
# claim order, skipping rows another worker holds (MariaDB 10.6+, MySQL 8). The index is
# named because the optimiser, seeing few rows, may prefer another one and sort; read in
# this index's order the statement stops after ``limit`` rows, however long the backlog.
# Under READ COMMITTED (the worker's isolation level) it locks only the rows it returns.
# The same transaction then marks them running (MARIADB_MARK_CLAIMED) and reads them back
# (MARIADB_CLAIMED_ROWS) by primary key, and commits: the locks live for those three.
MARIADB_CLAIM_ONE_QUEUE = """
SELECT id FROM jobs_job FORCE INDEX (jobs_claim)
 WHERE status = 'queued' AND queue = %s AND run_at <= CURRENT_TIMESTAMP(6)
 ORDER BY status, queue, priority, run_at, id
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
MARIADB_CLAIM_QUEUES = """
SELECT id FROM jobs_job FORCE INDEX (jobs_claim_any)
 WHERE status = 'queued' AND queue IN ({queues}) AND run_at <= CURRENT_TIMESTAMP(6)
 ORDER BY status, priority, run_at, id
 LIMIT %s
   FOR UPDATE SKIP LOCKED
"""
MARIADB_MARK_CLAIMED = """
UPDATE jobs_job
   SET status = 'running', attempts = attempts + 1, locked_by = %s,
       started_at = CURRENT_TIMESTAMP(6), heartbeat_at = CURRENT_TIMESTAMP(6),
       finished_at = NULL, progress = NULL, progress_message = ''
 WHERE id IN ({ids})
"""
MARIADB_CLAIMED_ROWS = """
SELECT id, type, payload, attempts, max_attempts, queue FROM jobs_job
 WHERE id IN ({ids})
 ORDER BY priority, run_at, id
"""

# The acknowledgement, fenced in two statements of one short transaction: lock the rows
# still running under this worker (by primary key), keep those whose attempt matches, and
# mark those succeeded.
MARIADB_LOCK_RUNNING = """
SELECT id, attempts FROM jobs_job
 WHERE id IN ({ids}) AND status = 'running' AND locked_by = %s
   FOR UPDATE
"""
MARIADB_COMPLETE = """
UPDATE jobs_job
   SET status = 'succeeded', finished_at = CURRENT_TIMESTAMP(6), progress = 100, error = ''
 WHERE id IN ({ids})
"""

# Bulk enqueue: one multi-row INSERT per batch. mysqlclient folds executemany into one
# statement only when every value is a placeholder, so the constants travel as parameters
# (``MARIADB_INSERT_MANY_CONSTANTS``), and the times come from the caller.
# IGNORE turns a duplicate active dedupe key (the unique index above) into a skipped row;
# every other value was checked before (``jobs.validation``), so it hides nothing else.
MARIADB_INSERT_MANY = """
INSERT IGNORE INTO jobs_job (type, queue, priority, payload, dedupe_key, run_at, max_attempts,
                             created_at, status, attempts, progress_message, error, message,
                             earlier_attempts)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
MARIADB_INSERT_MANY_CONSTANTS = ("queued", 0, "", "", "", 0)

# A timer step's guard: a named lock of the session, taken without waiting (timeout 0),
# released after the step; if the process dies the session ends and the lock with it.
# Named locks are the server's, not a database's (PostgreSQL's advisory locks are per
# database), so the name carries the database's CRC: another database on the same server
# (staging beside production) runs its own steps. Names are at most 64 characters, so the
# step's name goes in as its CRC too.
_TIMER_STEP_LOCK = "CONCAT('jobs.timer:', CRC32(DATABASE()), ':', %s)"
MARIADB_TRY_LOCK_TIMER_STEP = f"SELECT GET_LOCK({_TIMER_STEP_LOCK}, 0)"
MARIADB_UNLOCK_TIMER_STEP = f"SELECT RELEASE_LOCK({_TIMER_STEP_LOCK})"
# Which session holds a step's lock (NULL when none does): for the tests and an operator.
MARIADB_TIMER_STEP_LOCK_HOLDER = f"SELECT IS_USED_LOCK({_TIMER_STEP_LOCK})"

# The admin's tile estimate for a status that holds more rows than the page counts: the
# optimiser's row estimate for the status, from a dive into the index ``jobs_rare_status``
# (status, id), named so that the estimate does not depend on the index the optimiser would
# pick. EXPLAIN runs nothing and locks nothing.
MARIADB_ESTIMATE_STATUS_ROWS = (
    "EXPLAIN SELECT 1 FROM jobs_job FORCE INDEX (jobs_rare_status) WHERE status = %s"
)
# InnoDB caps a range's estimate at half the table's rows, so the dive says "half the table"
# for the status that fills most of it (succeeded; a million rows read as 495,000). That
# status is then estimated as the table's rows (InnoDB's running count, which EXPLAIN gives
# for a whole-index scan) less the rows of the other statuses (two ranges of the same index,
# each under the cap).
MARIADB_ESTIMATE_TABLE_ROWS = "EXPLAIN SELECT 1 FROM jobs_job FORCE INDEX (jobs_rare_status)"
MARIADB_ESTIMATE_OTHER_STATUS_ROWS = (
    "EXPLAIN SELECT 1 FROM jobs_job FORCE INDEX (jobs_rare_status) WHERE status <> %s"
)

# The metrics' statement timeout on MariaDB (``METRICS_SNAPSHOT`` above starts their
# transaction there too), in seconds: a session variable, so the session's own value is
# kept in a user variable and put back when the measurement ends.
MARIADB_SWAP_STATEMENT_TIME = (
    "SET @jobs_statement_time = @@SESSION.max_statement_time, @@SESSION.max_statement_time = %s"
)
MARIADB_RESTORE_STATEMENT_TIME = "SET @@SESSION.max_statement_time = @jobs_statement_time"
