"""Rows generated in bulk, in one statement each: the job tables as a long-running
system would have them. Needs Django set up first (``bench.lib.project.setup``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.db import connection

# MariaDB: the same rows from its SEQUENCE engine's seq_1_to_N tables.
MARIADB_HISTORY = """
INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                      progress_message, error, message, earlier_attempts, created_at,
                      started_at, finished_at{flag_column})
SELECT 'test.noop', 'default', {priority}, {status}, '{{}}', NOW(6) + INTERVAL {shift}, {attempts}, 3,
       '', '', '', 0, NOW(6) - INTERVAL 1 HOUR, {finished_at}, {finished_at}{flag}
  FROM seq_1_to_{count}
"""


def flags_jobs_due_later() -> bool:
    """Does the engine under measurement flag jobs due later (``Job.due_later``, migration
    0012)? The same benchmark then measures the engine before it too."""
    from jobs.models import Job

    return any(field.name == "due_later" for field in Job._meta.get_fields())


def history(finished: int, queued: int, *, queued_priority: int = 0) -> None:
    """``finished`` succeeded jobs and ``queued`` jobs due tomorrow (not claimable now), as
    the engine writes them (flagged due later where it flags them), of ``queued_priority``
    (the same as the measured jobs', or more urgent: -50, high, puts them first in claim
    order, so a claim that reads queued jobs in that order meets them all first)."""
    flagged = flags_jobs_due_later()
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            for count, fields in (
                (finished, {"status": "'succeeded'", "shift": "-1 HOUR", "attempts": 1, "priority": 0,
                            "finished_at": "NOW(6) - INTERVAL 1 HOUR", "flag": ", FALSE"}),
                (queued, {"status": "'queued'", "shift": "1 DAY", "attempts": 0, "priority": int(queued_priority),
                          "finished_at": "NULL", "flag": ", TRUE"}),
            ):  # fmt: skip
                if count:
                    if not flagged:
                        fields["flag"] = ""
                    flag_column = ", due_later" if flagged else ""
                    cursor.execute(
                        MARIADB_HISTORY.format(count=int(count), flag_column=flag_column, **fields)
                    )
            analyze(["jobs_job"])
            # Write the fill's pages out now (as PostgreSQL's CHECKPOINT below), so that the
            # page cleaner does not write them during the measured drain.
            cursor.execute("FLUSH TABLES jobs_job FOR EXPORT")
            cursor.execute("UNLOCK TABLES")
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
            f"""
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                                  progress_message, error, message{", due_later" if flagged else ""})
            SELECT 'test.noop', 'default', %s, 'queued', '{{}}', now() + interval '1 day', 0, 3, '', '', ''
                   {", true" if flagged else ""}
              FROM generate_series(1, %s)
            """,
            [queued_priority, queued],
        )
        analyze(["jobs_job"])
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


# One statement for both databases: row g is job g. The newest 300 are active (20 running,
# 280 queued, a third of those waiting for a retry); of the rest 1 % failed, 0.4 % cancelled,
# all else succeeded. Job g was created (n - g) × 100 ms ago and, when it ran, started a
# second later and took (g mod 50) × 100 ms. The fields in braces are the SQL that differs
# between PostgreSQL and MariaDB (``_dialect``): the integers 1 to n, the payload
# {"object_id": g}, and each moment as "so many milliseconds before now".
ADMIN_MIX = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, attempts,
                      max_attempts, created_at, started_at, finished_at, heartbeat_at,
                      locked_by, progress, progress_message, error, message)
SELECT type, queue, 0, status, {payload},
       CASE WHEN type = 'email.process' THEN CONCAT('email:', g) END,
       CASE WHEN status = 'queued' AND g %% 3 = 0 THEN {in_two_minutes} ELSE {created} END,
       CASE status WHEN 'failed' THEN 3 WHEN 'succeeded' THEN 1 WHEN 'running' THEN 1
                   WHEN 'queued' THEN CASE WHEN g %% 3 = 0 THEN 1 ELSE 0 END ELSE 0 END,
       3, {created},
       CASE WHEN status IN ('succeeded', 'failed', 'running') THEN {started} END,
       CASE WHEN status IN ('succeeded', 'failed') THEN {finished}
            WHEN status = 'cancelled' THEN {cancelled} END,
       CASE WHEN status = 'running' THEN {now} END,
       CASE WHEN status IN ('succeeded', 'failed', 'running') THEN CONCAT('bench-host:', g %% 4) END,
       CASE WHEN status = 'running' THEN g %% 100 WHEN status = 'succeeded' THEN 100 END,
       CASE WHEN status = 'running' THEN CONCAT('step ', g %% 10, ' of 10') ELSE '' END,
       CASE WHEN status = 'failed' OR (status = 'queued' AND g %% 3 = 0)
            THEN 'ConnectionError: upstream timed out' ELSE '' END,
       CASE WHEN status = 'cancelled' THEN 'Cancelled.' ELSE '' END
  FROM (SELECT g, {types} AS type, {queues} AS queue,
               CASE WHEN g > %(n)s - 280 THEN 'queued'
                    WHEN g > %(n)s - 300 THEN 'running'
                    WHEN g %% 100 = 7 THEN 'failed'
                    WHEN g %% 250 = 11 THEN 'cancelled'
                    ELSE 'succeeded' END AS status
          FROM {numbers}) AS job
"""

# The failed tries of those jobs: one per attempt of a failed job or of one queued for a
# retry (attempt a of 1 to 3, joined from a table of three integers).
ADMIN_MIX_ATTEMPTS = """
INSERT INTO jobs_attempt (job_id, type, attempt, worker, started_at, failed_at, error_class,
                          error, traceback, outcome)
SELECT id, type, a, COALESCE(locked_by, 'bench-host:0'), started_at, COALESCE(finished_at, {now}),
       'ConnectionError', 'upstream timed out',
       'Traceback (most recent call last):\n  File "x.py", line 1\nConnectionError',
       CASE WHEN a = attempts AND status = 'failed' THEN 'failed' ELSE 'queued' END
  FROM jobs_job JOIN {tries} ON a <= attempts
 WHERE status = 'failed' OR (status = 'queued' AND attempts > 0)
"""

# What ADMIN_MIX needs of each database: the integers 1 to n as a table of one column (a
# set-returning function; MariaDB's SEQUENCE engine's virtual table seq_1_to_N), a moment
# so many milliseconds before the statement's now, and a JSON object.
DIALECTS = {
    "postgresql": {
        "numbers": "generate_series(1, {n}) AS numbers({column})",
        "ago": "now() - ({ms}) * interval '1 ms'",
        "payload": "jsonb_build_object('object_id', g)",
    },
    "mysql": {
        "numbers": "(SELECT seq AS {column} FROM seq_1_to_{n}) AS numbers",
        "ago": "NOW(6) - INTERVAL (({ms}) * 1000) MICROSECOND",
        "payload": "JSON_OBJECT('object_id', g)",
    },
}


def _dialect(n: int) -> dict[str, str]:
    """ADMIN_MIX's fields in braces for this connection's database."""
    words = DIALECTS[connection.vendor]

    def ago(ms: str) -> str:
        return words["ago"].format(ms=ms)

    def pick(column: int) -> str:  # the TYPES entry g mod len(TYPES), as a CASE
        cases = " ".join(f"WHEN {i} THEN '{entry[column]}'" for i, entry in enumerate(TYPES))
        return f"CASE g %% {len(TYPES)} {cases} END"

    created = "(%(n)s - g) * 100"
    return {
        "numbers": words["numbers"].format(n=int(n), column="g"),
        "tries": words["numbers"].format(n=3, column="a"),
        "payload": words["payload"],
        "types": pick(0),
        "queues": pick(1),
        "now": ago("0"),
        "in_two_minutes": ago("-120000"),
        "created": ago(created),
        "started": ago(f"{created} - 1000"),
        "finished": ago(f"{created} - 1000 - (g %% 50) * 100"),
        "cancelled": ago(f"{created} - 5000"),
    }


def wipe(tables: Sequence[str]) -> None:
    """Empty ``tables`` and restart their ids. MariaDB truncates one table at a time, and a
    table another one's foreign key points to only with the checks off."""
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
            for table in tables:
                cursor.execute(f"TRUNCATE {table}")
            cursor.execute("SET FOREIGN_KEY_CHECKS = 1")
        else:
            cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


def analyze(tables: Sequence[str]) -> None:
    """Statistics of ``tables`` as after a bulk load: PostgreSQL's autovacuum would run VACUUM
    ANALYZE (the vacuum sets the visibility map, which index-only scans read), MariaDB's
    InnoDB samples on its own (ANALYZE TABLE does it now)."""
    with connection.cursor() as cursor:
        for table in tables:
            if connection.vendor == "mysql":
                cursor.execute(f"ANALYZE TABLE {table}")
                cursor.fetchall()  # it answers with a status row
            else:
                cursor.execute(f"VACUUM ANALYZE {table}")


def admin_mix(n: int) -> float:
    """Replace the job tables with ``n`` jobs of the admin page's mix (see ADMIN_MIX), then
    analyse them as autovacuum would after such a load; returns the seconds it took."""
    fields = _dialect(n)
    started = time.perf_counter()
    wipe(["jobs_job", "jobs_attempt", "jobs_worker"])
    with connection.cursor() as cursor:
        cursor.execute(ADMIN_MIX.format(**fields), {"n": n})
        cursor.execute(ADMIN_MIX_ATTEMPTS.format(**fields))
    analyze(["jobs_job", "jobs_attempt"])
    return time.perf_counter() - started


# --- the charts' rollup (jobs.rollup) ------------------------------------------------------

#: (queue, type, median run in ms, median wait in ms) of the synthetic fleet the charts show.
ROLLUP_TYPES = (
    ("mail", "mail.send", 120, 40),
    ("mail", "mail.bounce", 30, 40),
    ("default", "report.build", 2500, 300),
    ("default", "cache.warm", 8, 20),
    ("ai", "ai.classify", 900, 1500),
    ("index", "index.document", 60, 80),
)
_SPREAD = (1, 3, 8, 12, 8, 3, 1)  # the share of each bucket around the median, of 36


def rollup_day(per_minute: int, now: object = None) -> tuple[int, float]:
    """Replace the rollup and the depth samples with a day of a fleet finishing
    ``per_minute`` tries a minute (by both spans, as the engine writes them), with a backlog
    in the afternoon that makes the waits and the depth climb; returns (rows, seconds)."""
    import math
    import random
    from datetime import timedelta

    from django.utils import timezone

    from jobs import rollup
    from jobs.models import QueueDepth, Rollup

    started = time.perf_counter()
    wipe(["jobs_rollup", "jobs_queue_depth"])
    now = now or timezone.now()
    last = rollup.span_start(now, 1)  # type: ignore[arg-type]
    share = per_minute / len(ROLLUP_TYPES)
    counts: dict[tuple, int] = {}
    depth: list[QueueDepth] = []
    for back in range(24 * 60):
        minute = last - timedelta(minutes=back)
        phase = math.sin(back / 240) ** 2  # a slow wave over the day
        spike = 6.0 if 300 <= back <= 360 else 1.0  # a backlog five hours ago
        if 18 <= back <= 24:
            spike = 3.0  # and a short one twenty minutes ago
        noise = 0.8 + 0.4 * random.Random(back).random()  # minute to minute
        for queue, type_name, run_ms, wait_ms in ROLLUP_TYPES:
            total = share * (0.6 + 0.8 * phase) * noise
            for outcome, part in ((rollup.SUCCEEDED, 0.975), (rollup.RETRIED, 0.02), (rollup.FAILED, 0.005)):
                tries = total * part * (4 if outcome != rollup.SUCCEEDED and spike > 1 else 1)
                waited = wait_ms * spike * (1 + phase) * noise
                for measure, median in ((rollup.WAIT, waited), (rollup.RUN, run_ms * (0.9 + 0.2 * noise))):
                    centre = rollup.bucket(median / 1000)
                    for offset, weight in enumerate(_SPREAD, start=-3):
                        count = round(tries * weight / 36)
                        if count <= 0:
                            continue
                        index = max(0, min(rollup.LAST_BUCKET, centre + offset))
                        # each try under its type, its queue and the whole fleet, as the engine writes it
                        groups = ((queue, type_name), (queue, rollup.ALL), (rollup.ALL, rollup.ALL))
                        for span in rollup.SPANS:
                            start = rollup.span_start(minute, span)
                            for group in groups:
                                key = (span, start, *group, outcome, measure, index)
                                counts[key] = counts.get(key, 0) + count
        for queue in sorted({queue for queue, *_ in ROLLUP_TYPES}):
            due = int(share * (0.2 + phase) * (40 if spike > 1 else 1))
            depth.append(QueueDepth(minute=minute, queue=queue, due=due, running=int(8 + 8 * phase)))
    rows = [
        Rollup(
            **dict(
                zip(("span", "minute", "queue", "type", "outcome", "measure", "bucket"), key, strict=True)
            ),
            tries=n,
        )
        for key, n in counts.items()
    ]
    Rollup.objects.bulk_create(rows, batch_size=5000)
    QueueDepth.objects.bulk_create(depth, batch_size=5000)
    analyze(["jobs_rollup", "jobs_queue_depth"])
    return len(rows) + len(depth), time.perf_counter() - started
