"""How fast the "Background jobs" admin page answers with a million jobs in the table.

    .venv/bin/python -m bench.admin_page
    .venv/bin/python -m bench.admin_page --database mysql://root@127.0.0.1:3306/jp_admin_bench

Uses the database in DATABASE_URL (default ``jp_admin_bench`` on the local PostgreSQL,
created if missing) or the one given with --database (MariaDB too; created if missing).
Fills ``jobs_job`` with --jobs rows (default 1,000,000; mostly succeeded, 1 % failed, a few
hundred queued and running) in one INSERT … SELECT (``bench.lib.fill.admin_mix``), gives
the tables fresh statistics as autovacuum would after such a load, then times the page, its
3-second refresh (the same URL with the X-Jobs-Refresh header) and the views an operator
clicks, through Django's test Client logged in as an operator (staff with platform.view_jobs
and platform.change_job, not a superuser). Prints the median and max of --runs runs per
view, after one warm-up each. The target is 300 ms (median) for the page with its charts and
its refresh; the charts' rollup holds a day of --per-minute tries finished a minute
(``bench.lib.fill.rollup_day``), and the page is also timed with the charts' figures read
afresh each time (their half-minute cache cleared). The tiles
and the queue lines above them are also timed alone, and the tiles' figures are printed
beside the true counts (they estimate past 10,000 rows). The tables are wiped first: use a
database of your own. --keep reuses a table that already holds --jobs rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.lib import project

TARGET_MS = 300.0
PAGE = "/admin/platform/job/"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--per-minute", type=int, default=100_000, help="tries finished a minute in the charts' day of rollup"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="reuse the table if it holds --jobs rows (and the rollup if filled)",
    )
    parser.add_argument(
        "--database",
        help="the database URL to measure (postgres://… or mysql://… for MariaDB); its job tables are wiped",
    )
    args = parser.parse_args()
    project.open_database(args.database, "jp_admin_bench")
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Count
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.lib import engine, fill
    from bench.lib.admin import operator, time_view
    from jobs import coverage
    from jobs.admin import REFRESH_HEADER, charts, status_counts
    from jobs.models import Job

    call_command("migrate", verbosity=0)
    print(f"{engine.server_version()}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    if not (args.keep and Job.objects.count() == args.jobs):
        seconds = fill.admin_mix(args.jobs)
        analyse = "ANALYZE TABLE" if engine.on_mariadb() else "VACUUM ANALYZE"
        print(f"filled {args.jobs:,} jobs in {seconds:.1f} s (then {analyse})")
    rows, seconds = fill.rollup_day(args.per_minute)
    print(
        f"filled the charts' rollup: a day at {args.per_minute:,} tries a minute, {rows:,} rows in {seconds:.1f} s"
    )

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
            worst = max(worst, median)
        print(f"{label:34} {median:8.1f} {peak:8.1f}")
    timings = []
    for _ in range(args.runs):  # the charts' figures read afresh each time (no cache)
        charts.clear_cache()
        started = time.perf_counter()
        client.get(PAGE)
        timings.append((time.perf_counter() - started) * 1000)
    uncached = statistics.median(timings)
    worst = max(worst, uncached)
    print(f"{'page, charts read afresh':34} {uncached:8.1f} {max(timings):8.1f}")
    timings = []
    for _ in range(args.runs):
        charts.clear_cache()
        started = time.perf_counter()
        charts.charts_for(None)
        timings.append((time.perf_counter() - started) * 1000)
    print(f"{'charts alone (both windows)':34} {statistics.median(timings):8.1f} {max(timings):8.1f}")
    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        counts = status_counts()
        timings.append((time.perf_counter() - started) * 1000)
    print(f"{'tiles alone (status_counts)':34} {statistics.median(timings):8.1f} {max(timings):8.1f}")
    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        coverage.queue_states()
        timings.append((time.perf_counter() - started) * 1000)
    print(f"{'queue lines alone (queue_states)':34} {statistics.median(timings):8.1f} {max(timings):8.1f}")
    print("tiles: " + ", ".join(f"{c.status} {c.figure} ({c.caption})" for c in counts.values()))
    truth = dict(Job.objects.filter(status__in=counts).order_by().values_list("status").annotate(Count("id")))
    print("true counts: " + ", ".join(f"{status} {truth.get(status, 0):,}" for status in counts))
    for label, headers in (("page", None), ("refresh", {REFRESH_HEADER: "1"})):
        with CaptureQueriesContext(connection) as queries:
            client.get(PAGE, headers=headers or {})
        print(f"SQL statements per {label}: {len(queries)}")
    verdict = "within" if worst < TARGET_MS else "OVER"
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"page and refresh: worst median {worst:.1f} ms, {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
