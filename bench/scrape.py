"""What one measurement of the scaling signals costs with a big jobs table.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_scrape_bench .venv/bin/python -m bench.scrape

Fills ``jobs_job`` in one INSERT … SELECT generate_series with --finished rows (1 % failed
for good, the rest succeeded, finished over the last day in id order), --due queued jobs
(due over the last 10 minutes, four queues, four priorities) and 200 running ones, and 20
live workers; runs VACUUM ANALYZE as autovacuum would after such a load. Then times
``jobs.metrics.measure()`` (what ``sweep`` publishes) and a scrape of ``/metrics`` through
Django's test Client, median and max of --runs runs after one warm-up, and prints each
statement's plan, so you can see which index serves it. The tables are wiped first: use a
database of your own.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.lib import project

project.setup("jp_scrape_bench")

from django.conf import settings  # noqa: E402 - after project.setup()
from django.core.management import call_command  # noqa: E402 - after project.setup()
from django.db import connection  # noqa: E402 - after project.setup()
from django.test import Client  # noqa: E402 - after project.setup()
from django.test.utils import CaptureQueriesContext  # noqa: E402 - after project.setup()

from jobs import metrics  # noqa: E402 - after project.setup()

QUEUES = "ARRAY['default', 'ingestion', 'ai', 'mail']"

FINISHED = f"""
INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                      created_at, finished_at, progress_message, error, message)
SELECT 'test.noop', ({QUEUES})[1 + g %% 4], 0,
       CASE WHEN g %% 100 = 7 THEN 'failed' ELSE 'succeeded' END, '{{}}',
       now() - interval '1 day', 1, 3, now() - interval '1 day',
       now() - (%(n)s - g) * (interval '1 day' / %(n)s), '', '', ''
  FROM generate_series(1, %(n)s) AS g
"""

ACTIVE = f"""
INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                      created_at, heartbeat_at, locked_by, progress_message, error, message)
SELECT 'test.noop', ({QUEUES})[1 + g %% 4], (ARRAY[-100, -50, 0, 50])[1 + g %% 4],
       CASE WHEN g <= 200 THEN 'running' ELSE 'queued' END, '{{}}',
       now() - (g %% 600) * interval '1 second', (g <= 200)::int, 3, now(),
       CASE WHEN g <= 200 THEN now() END, CASE WHEN g <= 200 THEN 'bench:' || g %% 20 END, '', '', ''
  FROM generate_series(1, %(n)s + 200) AS g
"""

WORKERS = """
INSERT INTO jobs_worker (name, host, pid, queues, started_at, last_seen)
SELECT 'bench:' || g, 'bench', g, '["ai,default,ingestion,mail:2"]'::jsonb, now(), now()
  FROM generate_series(0, 19) AS g
"""


def fill(finished: int, due: int) -> None:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE")
        cursor.execute(FINISHED, {"n": finished})
        cursor.execute(ACTIVE, {"n": due})
        cursor.execute(WORKERS)
        cursor.execute("VACUUM ANALYZE jobs_job")
    print(f"filled {finished:,} finished and {due:,} due jobs in {time.perf_counter() - started:.1f} s")


def timed(run, runs: int) -> list[float]:
    timings = []
    for attempt in range(runs + 1):
        started = time.perf_counter()
        run()
        if attempt:  # the first run warms caches and the connection
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    fill(args.finished, args.due)
    settings.JOBS_METRICS_TOKEN = "bench"
    client = Client(HTTP_HOST="localhost")

    def scrape() -> None:
        response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer bench")
        assert response.status_code == 200, response.status_code

    figures = metrics.measure()
    print(
        f"measured: {figures.total:,} due, {figures.total_running} running, {figures.total_failed} failed "
        f"in {figures.failed_window:.0f} s, oldest due {figures.oldest_due_age():.0f} s, "
        f"{figures.live_workers} live workers"
    )
    print(f"{'':24} {'median':>8} {'max':>8}  (ms, {args.runs} runs after a warm-up)")
    for label, run in (("measure()", metrics.measure), ("GET /metrics", scrape)):
        timings = timed(run, args.runs)
        print(f"{label:24} {statistics.median(timings):8.1f} {max(timings):8.1f}")

    with CaptureQueriesContext(connection) as captured:
        metrics.measure()
    for query in captured.captured_queries:
        if not query["sql"].startswith("SELECT") or "set_config" in query["sql"]:
            continue
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + query["sql"])
            plan = [row[0] for row in cursor.fetchall()]
        print(f"\n{query['sql'][:150]}…")
        print("\n".join(f"    {line}" for line in plan))


if __name__ == "__main__":
    main()
