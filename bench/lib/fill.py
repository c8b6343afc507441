"""Rows generated in bulk, in one statement each: the job tables as a long-running
system would have them. Needs Django set up first (``bench.lib.project.setup``)."""

from __future__ import annotations

import time

from django.db import connection

# MariaDB: the same rows from its SEQUENCE engine's seq_1_to_N tables.
MARIADB_HISTORY = """
INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                      progress_message, error, message, earlier_attempts, created_at,
                      started_at, finished_at)
SELECT 'test.noop', 'default', 0, {status}, '{{}}', NOW(6) + INTERVAL {shift}, {attempts}, 3,
       '', '', '', 0, NOW(6) - INTERVAL 1 HOUR, {finished_at}, {finished_at}
  FROM seq_1_to_{count}
"""


def history(finished: int, queued: int) -> None:
    """``finished`` succeeded jobs and ``queued`` future-dated jobs (not claimable now)."""
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            for count, fields in (
                (finished, {"status": "'succeeded'", "shift": "-1 HOUR", "attempts": 1,
                            "finished_at": "NOW(6) - INTERVAL 1 HOUR"}),
                (queued, {"status": "'queued'", "shift": "1 DAY", "attempts": 0, "finished_at": "NULL"}),
            ):  # fmt: skip
                if count:
                    cursor.execute(MARIADB_HISTORY.format(count=int(count), **fields))
            cursor.execute("ANALYZE TABLE jobs_job")
            cursor.fetchall()
            return
        cursor.execute(
            """
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                                  progress_message, error, message, created_at, started_at, finished_at)
            SELECT 'test.noop', 'default', 0, 'succeeded', '{}', now() - interval '1 hour', 1, 3, '', '', '',
                   now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
              FROM generate_series(1, %s)
            """,
            [finished],
        )
        cursor.execute(
            """
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                                  progress_message, error, message)
            SELECT 'test.noop', 'default', 0, 'queued', '{}', now() + interval '1 day', 0, 3, '', '', ''
              FROM generate_series(1, %s)
            """,
            [queued],
        )
        cursor.execute("VACUUM ANALYZE jobs_job")
        # Flush the fill's WAL now, so the checkpoint it would trigger does not land in the
        # middle of the measured drain.
        cursor.execute("CHECKPOINT")


# (type, queue) of the admin mix: the eleven workspace types, plus the email pipeline's job.
TYPES = [
    ("repository.ingest", "ingestion"),
    ("repository.analyse", "ai"),
    ("ai.workflow", "ai"),
    ("pullrequest.sync", "default"),
    ("checks.sync", "default"),
    ("workmanagement.sync", "default"),
    ("brain.derive", "ai"),
    ("decisions.mine", "ai"),
    ("workspace.provision", "ingestion"),
    ("capsules.retrospective", "ingestion"),
    ("retention.purge", "default"),
    ("email.process", "mail"),
]

# One statement: row g is job g. The newest 300 are active (20 running, 280 queued, a third
# of those waiting for a retry); of the rest 1 % failed, 0.4 % cancelled, all else succeeded.
ADMIN_MIX = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, attempts,
                      max_attempts, created_at, started_at, finished_at, heartbeat_at,
                      locked_by, progress, progress_message, error, message)
SELECT t.type, t.queue, 0, s.status,
       jsonb_build_object('object_id', g),
       CASE WHEN t.type = 'email.process' THEN 'email:' || g END,
       CASE WHEN s.status = 'queued' AND g %% 3 = 0 THEN now() + interval '2 minutes'
            ELSE created END,
       CASE s.status WHEN 'failed' THEN 3 WHEN 'succeeded' THEN 1 WHEN 'running' THEN 1
                     WHEN 'queued' THEN (g %% 3 = 0)::int ELSE 0 END,
       3, created,
       CASE WHEN s.status IN ('succeeded', 'failed', 'running') THEN created + interval '1 second' END,
       CASE WHEN s.status IN ('succeeded', 'failed') THEN created + interval '1 second' + (g %% 50) * interval '100 ms'
            WHEN s.status = 'cancelled' THEN created + interval '5 seconds' END,
       CASE WHEN s.status = 'running' THEN now() END,
       CASE WHEN s.status IN ('succeeded', 'failed', 'running') THEN 'bench-host:' || (g %% 4) END,
       CASE WHEN s.status = 'running' THEN g %% 100 WHEN s.status = 'succeeded' THEN 100 END,
       CASE WHEN s.status = 'running' THEN 'step ' || (g %% 10) || ' of 10' ELSE '' END,
       CASE WHEN s.status = 'failed' OR (s.status = 'queued' AND g %% 3 = 0)
            THEN 'ConnectionError: upstream timed out' ELSE '' END,
       CASE WHEN s.status = 'cancelled' THEN 'Cancelled.' ELSE '' END
  FROM generate_series(1, %(n)s) AS g
 CROSS JOIN LATERAL (SELECT now() - (%(n)s - g) * interval '100 ms' AS created) AS c
 CROSS JOIN LATERAL (
        SELECT CASE WHEN g > %(n)s - 280 THEN 'queued'
                    WHEN g > %(n)s - 300 THEN 'running'
                    WHEN g %% 100 = 7 THEN 'failed'
                    WHEN g %% 250 = 11 THEN 'cancelled'
                    ELSE 'succeeded' END AS status) AS s
 CROSS JOIN LATERAL (SELECT (ARRAY[{types}])[1 + g %% {count}] AS type,
                            (ARRAY[{queues}])[1 + g %% {count}] AS queue) AS t
"""

ADMIN_MIX_ATTEMPTS = """
INSERT INTO jobs_attempt (job_id, type, attempt, worker, started_at, failed_at, error_class,
                          error, traceback, outcome)
SELECT id, type, a, coalesce(locked_by, 'bench-host:0'), started_at, coalesce(finished_at, now()), 'ConnectionError',
       'upstream timed out', 'Traceback (most recent call last):\n  File "x.py", line 1\nConnectionError',
       CASE WHEN a = attempts AND status = 'failed' THEN 'failed' ELSE 'queued' END
  FROM jobs_job CROSS JOIN LATERAL generate_series(1, attempts) AS a
 WHERE status = 'failed' OR (status = 'queued' AND attempts > 0)
"""


def admin_mix(n: int) -> float:
    """Replace the job tables with ``n`` jobs of the admin page's mix (see ADMIN_MIX), then
    VACUUM ANALYZE as autovacuum would after such a load; returns the seconds it took."""
    types = ", ".join(f"'{name}'" for name, _ in TYPES)
    queues = ", ".join(f"'{queue}'" for _, queue in TYPES)
    statement = ADMIN_MIX.format(types=types, queues=queues, count=len(TYPES))
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE")
        cursor.execute(statement, {"n": n})
        cursor.execute(ADMIN_MIX_ATTEMPTS)
        cursor.execute("VACUUM ANALYZE jobs_job")
        cursor.execute("VACUUM ANALYZE jobs_attempt")
    return time.perf_counter() - started
