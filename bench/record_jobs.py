"""How fast a record's jobs are found when the table keeps a long history: a list page's
"last job" column and a record page's "Recent jobs" panel.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_records_bench .venv/bin/python -m bench.record_jobs

Fills ``jobs_job`` with --jobs rows of the admin page's mix (default 1,000,000), then
--records work connections, each with --per-record kept ``workmanagement.sync`` jobs (the
reconcile timer's every 15 minutes for ten days is about 1,000), runs VACUUM ANALYZE, and
times, median and max of --runs runs after a warm-up: the newest job of each of 100 and of
25 connections (``jobs.queries.latest_jobs_about``, one statement), one connection's ten
newest jobs (``jobs.jobs_about``), and the work-connection list page with its "last job"
column through Django's test Client as a superuser, with its SQL statement count. The
tables are wiped first: use a database of your own.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.lib import project


def timed(call: Callable[[], object], runs: int) -> tuple[float, float]:
    call()  # warm-up
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings), max(timings)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--per-record", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    project.setup("jp_records_bench")
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    import jobs
    from bench.lib import fill
    from jobs import queries
    from workspaces.models import Organization, WorkConnection, Workspace

    call_command("migrate", verbosity=0)
    seconds = fill.admin_mix(args.jobs)
    WorkConnection.objects.all().delete()
    workspace = Workspace.objects.create(
        organization=Organization.objects.create(name="Bench", billing_email="bench@example.com"),
        name="Bench",
    )
    ids = [
        WorkConnection.objects.create(workspace=workspace, kind="jira", name=f"Project {n}").pk
        for n in range(args.records)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO jobs_job (type, queue, priority, status, payload, dedupe_key, run_at, attempts,
                                  max_attempts, progress_message, error, message, created_at, finished_at)
            SELECT 'workmanagement.sync', 'default', 2, 'succeeded', jsonb_build_object('connection_id', c),
                   'connection:' || c, now(), 1, 3, '', '', '', now(), now()
              FROM unnest(%s::bigint[]) AS c CROSS JOIN generate_series(1, %s)
            """,
            [ids, args.per_record],
        )
        cursor.execute("VACUUM ANALYZE jobs_job")
    print(
        f"filled {args.jobs:,} jobs in {seconds:.1f} s, then {args.records} connections with "
        f"{args.per_record:,} kept syncs each; {args.runs} runs after a warm-up; times in ms"
    )

    client = Client(HTTP_HOST="localhost")
    client.force_login(
        User.objects.filter(username="bench").first() or User.objects.create_superuser("bench")
    )
    # The list shows 100 rows a page: a page of --records connections (at most 100).
    views = [
        (f"newest job of {len(ids)} connections", lambda: queries.latest_jobs_about("connection_id", ids)),
        (
            f"newest job of {len(ids[:25])} connections",
            lambda: queries.latest_jobs_about("connection_id", ids[:25]),
        ),
        ("ten newest of one connection", lambda: list(jobs.jobs_about(connection_id=ids[0])[:10])),
        ("work-connection list page", lambda: client.get("/admin/workspaces/workconnection/")),
    ]
    print(f"{'what':34} {'median':>8} {'max':>8}")
    for label, call in views:
        median, peak = timed(call, args.runs)
        print(f"{label:34} {median:8.1f} {peak:8.1f}")
    with CaptureQueriesContext(connection) as statements:
        page = client.get("/admin/workspaces/workconnection/")
    shown = page.content.decode().count('class="record-last-job"')
    print(f"list page: {shown} rows with their last job, {len(statements)} SQL statements")


if __name__ == "__main__":
    main()
