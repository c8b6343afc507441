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
# payload goes out as text: the child process parses it. RETURNING has no order of its
# own, so the outer SELECT hands the batch out in claim order.
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
RETURNING id, type, payload::text AS payload, attempts, max_attempts, priority, run_at
)
SELECT id, type, payload, attempts, max_attempts FROM claimed ORDER BY priority, run_at, id
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
