"""Workflows at scale: starting one of 10,000 steps, its page, and a step's release.

    .venv/bin/python -m bench.workflows
    .venv/bin/python -m bench.workflows --database mysql://root@127.0.0.1:3306/jp_workflow_bench

Uses the database in DATABASE_URL (default ``jp_workflow_bench`` on the local PostgreSQL,
created if missing) or the one given with --database (MariaDB too). Its job and workflow
tables are wiped: use a database of your own.

- **start**: ``jobs.start`` of a 10,000-step workflow in two shapes, a group of 9,999 steps
  then a callback (10,000 edges; 9,999 jobs released at once) and a group of 100 chains of
  100 steps (9,900 edges; 100 jobs released): the seconds it takes and its statements.
- **page**: the workflow's page (its graph) for each, through Django's test client as an
  operator (staff with ``platform.view_jobs``), median and max of --runs runs after a
  warm-up; the target is 300 ms.
- **release**: a step completing (``store.complete_in_transaction`` in its transaction)
  with 1, 100 and 9,999 steps waiting for it: the statements and milliseconds of the
  whole completion, which releases them all.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.lib import project

TARGET_MS = 300.0
SIZE = 10_000
TABLES = (
    "jobs_workflow_edge",
    "jobs_workflow_step",
    "jobs_workflow",
    "jobs_job",
    "jobs_attempt",
    "testjobs_execution",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--database", help="the database URL (postgres://… or mysql://…); its tables are wiped"
    )
    args = parser.parse_args()
    project.open_database(args.database, "jp_workflow_bench")
    from django.contrib.auth.models import Permission, User
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    import jobs
    from bench.lib import engine
    from bench.lib.admin import time_view
    from bench.lib.fill import analyze, wipe
    from jobs import store

    call_command("migrate", verbosity=0)
    print(f"{engine.server_version()}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")

    def step(number: int) -> jobs.Step:
        return jobs.step("test.step", {"value": number}, name=f"s{number}")

    shapes = {
        "group of 9,999 then a callback": lambda: jobs.group(
            [step(n) for n in range(SIZE - 1)], then=step(SIZE - 1)
        ),
        "group of 100 chains of 100": lambda: jobs.group(
            [jobs.chain(*(step(c * 100 + n) for n in range(100))) for c in range(SIZE // 100)]
        ),
    }
    user, _ = User.objects.get_or_create(username="bench-viewer", defaults={"is_staff": True})
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="platform", codename="view_jobs")
    )
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)

    print(f"\nstart and page of a {SIZE:,}-step workflow ({args.runs} runs each; times in ms)")
    print(f"{'shape':34} {'build':>7} {'start':>7} {'stmts':>6} {'page med':>9} {'page max':>9}")
    worst = 0.0
    for label, build in shapes.items():
        builds, starts, statements = [], [], 0
        for _ in range(args.runs):
            wipe(TABLES)
            began = time.perf_counter()
            flow = build()
            built = time.perf_counter()
            with CaptureQueriesContext(connection) as queries, transaction.atomic():
                workflow = jobs.start(flow, name=label)
            builds.append((built - began) * 1000)
            starts.append((time.perf_counter() - built) * 1000)
            statements = len(queries)
        analyze(["jobs_workflow_step", "jobs_workflow_edge", "jobs_job"])
        pages = time_view(client, jobs.workflow_url(workflow), args.runs)
        worst = max(worst, max(pages))
        print(
            f"{label:34} {statistics.median(builds):7.0f} {statistics.median(starts):7.0f} {statements:6d}"
            f" {statistics.median(pages):9.1f} {max(pages):9.1f}"
        )

    print("\nrelease: a step completing with N steps waiting for it (its transaction, all of them released)")
    print(f"{'successors':>10} {'stmts':>6} {'ms':>8} {'released':>9}")
    for width in (1, 100, SIZE - 1):
        wipe(TABLES)
        workflow = jobs.start(jobs.chain(step(-1), jobs.group([step(n) for n in range(width)])))
        head = jobs.workflow_steps(workflow)[0]
        assert head.job_id is not None
        claimed = store.claim_job("bench", head.job_id)
        assert claimed is not None
        began = time.perf_counter()
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            store.complete_in_transaction("bench", claimed.id, claimed.attempt, step=head.id, result=None)
        took = (time.perf_counter() - began) * 1000
        released = jobs.Job.objects.filter(step__workflow_id=workflow.pk).count() - 1
        print(f"{width:10,} {len(queries):6d} {took:8.1f} {released:9,}")
    wipe(TABLES)
    verdict = "within" if worst < TARGET_MS else "OVER"
    print(f"\nworst page {worst:.1f} ms: {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
