"""How fast the "Background jobs" admin page answers with a million jobs in the table.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_admin_bench \\
    DJANGO_SETTINGS_MODULE=config.settings_test .venv/bin/python bench/admin_page.py

Fills ``jobs_job`` with --jobs rows (default 1,000,000; mostly succeeded, 1 % failed, a few
hundred queued and running) in one INSERT … SELECT generate_series, runs VACUUM ANALYZE as
autovacuum would after such a load, then times the page, its 3-second refresh (the same URL
with the X-Jobs-Refresh header) and the views an operator clicks, through Django's test
Client logged in as an operator (staff with platform.view_jobs and platform.change_job, not
a superuser). Prints the median and max of --runs runs per view, after one warm-up each.
The target is 300 ms for the page and its refresh. The tables are wiped first: use a
database of your own. --keep reuses a table that already holds --jobs rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jp_admin_bench")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Permission, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from jobs.admin import REFRESH_HEADER, status_counts  # noqa: E402

TARGET_MS = 300.0
PAGE = "/admin/platform/job/"

# (type, queue): the eleven types of the jobs page, plus the email pipeline's job.
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
FILL = """
INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, attempts,
                      max_attempts, created_at, started_at, finished_at, heartbeat_at,
                      locked_by, progress, progress_message, error, message)
SELECT t.type, t.queue, 2, s.status,
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

ATTEMPTS = """
INSERT INTO jobs_attempt (job_id, type, attempt, worker, started_at, failed_at, error_class,
                          error, traceback, outcome)
SELECT id, type, a, coalesce(locked_by, 'bench-host:0'), started_at, coalesce(finished_at, now()), 'ConnectionError',
       'upstream timed out', 'Traceback (most recent call last):\n  File "x.py", line 1\nConnectionError',
       CASE WHEN a = attempts AND status = 'failed' THEN 'failed' ELSE 'queued' END
  FROM jobs_job CROSS JOIN LATERAL generate_series(1, attempts) AS a
 WHERE status = 'failed' OR (status = 'queued' AND attempts > 0)
"""


def fill(n: int) -> None:
    types = ", ".join(f"'{name}'" for name, _ in TYPES)
    queues = ", ".join(f"'{queue}'" for _, queue in TYPES)
    statement = FILL.format(types=types, queues=queues, count=len(TYPES))
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE")
        cursor.execute(statement, {"n": n})
        cursor.execute(ATTEMPTS)
        cursor.execute("VACUUM ANALYZE jobs_job")
        cursor.execute("VACUUM ANALYZE jobs_attempt")
    print(f"filled {n:,} jobs in {time.perf_counter() - started:.1f} s (then VACUUM ANALYZE)")


def operator() -> User:
    user, _ = User.objects.get_or_create(username="bench-operator", defaults={"is_staff": True})
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="platform", codename__in=["view_jobs", "change_job"]
        )
    )
    return user


def time_view(client: Client, url: str, runs: int, headers: dict[str, str] | None = None) -> list[float]:
    timings = []
    for attempt in range(runs + 1):
        started = time.perf_counter()
        response = client.get(url, headers=headers or {})
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
        if attempt:  # the first run warms caches and the connection
            timings.append(elapsed)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="reuse the table if it holds --jobs rows")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM jobs_job")
        present = cursor.fetchone()[0]
    if not (args.keep and present == args.jobs):
        fill(args.jobs)

    from jobs.models import Job

    failed_id = Job.objects.filter(status="failed").order_by("-id").values_list("id", flat=True).first()
    key = (
        Job.objects.filter(dedupe_key__isnull=False)
        .order_by("id")
        .values_list("dedupe_key", flat=True)
        .first()
    )
    client = Client(HTTP_HOST="localhost")
    client.force_login(operator())

    views = [
        ("page (newest first)", PAGE, None),
        ("refresh (fragment)", PAGE, {REFRESH_HEADER: "1"}),
        ("tile: queued", f"{PAGE}?status=queued", None),
        ("tile: running", f"{PAGE}?status=running", None),
        ("tile: succeeded", f"{PAGE}?status=succeeded", None),
        ("tile: failed", f"{PAGE}?status=failed", None),
        ("refresh of tile: failed", f"{PAGE}?status=failed", {REFRESH_HEADER: "1"}),
        ("mail's failed list", f"{PAGE}?status=failed&queue=mail", None),
        ("filter: queue=ai", f"{PAGE}?queue=ai", None),
        ("filter: type=retention.purge", f"{PAGE}?type=retention.purge", None),
        ("filter: type unknown (no rows)", f"{PAGE}?type=nothing.here", None),
        ("search: id", f"{PAGE}?q={failed_id}", None),
        ("search: old dedupe key", f"{PAGE}?q={key}", None),
        ("page 100", f"{PAGE}?p=100", None),
        ("job page (failed, 3 attempts)", f"{PAGE}{failed_id}/change/", None),
    ]
    print(f"{Job.objects.count():,} jobs; {args.runs} runs per view after a warm-up; times in ms")
    print(f"{'view':34} {'median':>8} {'max':>8}")
    worst = 0.0
    for label, url, headers in views:
        timings = time_view(client, url, args.runs, headers)
        median, peak = statistics.median(timings), max(timings)
        if label.startswith(("page", "refresh")):
            worst = max(worst, peak)
        print(f"{label:34} {median:8.1f} {peak:8.1f}")
    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        counts = status_counts()
        timings.append((time.perf_counter() - started) * 1000)
    print(f"{'tiles alone (status_counts)':34} {statistics.median(timings):8.1f} {max(timings):8.1f}")
    print("tiles: " + ", ".join(f"{c.status} {c.figure} ({c.caption})" for c in counts.values()))
    for label, headers in (("page", None), ("refresh", {REFRESH_HEADER: "1"})):
        with CaptureQueriesContext(connection) as queries:
            client.get(PAGE, headers=headers or {})
        print(f"SQL statements per {label}: {len(queries)}")
    verdict = "within" if worst < TARGET_MS else "OVER"
    print(f"page and refresh: worst run {worst:.1f} ms, {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
