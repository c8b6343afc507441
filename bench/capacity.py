"""The inputs of the fleet's capacity model, measured, and the model itself. From the
project root:

    .venv/bin/python -m bench.capacity                 # everything (about 6 minutes)
    .venv/bin/python -m bench.capacity --only connections

- connections: the PostgreSQL sessions of one running ``runworker`` (tagged with an
  ``application_name`` and counted in ``pg_stat_activity``), at the default concurrency
  and with ``--queue`` lanes, straight to PostgreSQL and through PgBouncer;
- throughput: jobs/s of tasks (``runworker`` at the default concurrency, through
  PgBouncer in transaction mode, LISTEN direct) draining jobs of one length (``test.noop``;
  ``test.pause`` of 20 ms and 200 ms, which only sleep), and the CPU that PostgreSQL's
  backends and PgBouncer spend per job meanwhile (from ``/proc``: both run on this
  machine); no-op jobs also straight to PostgreSQL, once as behind the pooler (unprepared,
  synchronous commits) and once with the direct defaults (prepared, asynchronous), to
  tell the pooler's cost from its settings';
- claim: the claim statement's own execution time (``EXPLAIN ANALYZE``, rolled back) with
  10,000 due jobs, for a batch of 1 and of 16;
- idle: the CPU an idle task costs PostgreSQL and PgBouncer each second (its polls and
  heartbeats).

Throughput figures are medians of --runs runs (default 3). The model divides what one PostgreSQL core (and PgBouncer's one thread) can give by what
one task takes, per job length. Uses the database in DATABASE_URL (default ``jp_fleet``,
created if missing) and wipes its job tables; starts its own PgBouncer on a free port.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

from bench.lib import project
from bench.lib.postgres import ensure_database

PARTS = ["connections", "throughput", "claim", "idle"]
# (label, job type, payload, jobs, tasks, through PgBouncer, more environment): enough jobs
# for ~10 s each, and enough tasks that the database's CPU per job is read over many jobs.
# The last two take no-op jobs straight to PostgreSQL, as behind the pooler (unprepared,
# synchronous commits) and with the defaults there (prepared, asynchronous commits).
BEHIND_A_POOLER = {"JOBS_PREPARED_STATEMENTS": "false", "JOBS_WORKER_ASYNC_COMMIT": "false"}
LENGTHS = [
    ("no-op", "test.noop", {}, 20_000, 1, True, {}),
    ("20 ms", "test.pause", {"seconds": 0.02}, 2_000, 2, True, {}),
    ("200 ms", "test.pause", {"seconds": 0.2}, 1_200, 8, True, {}),
    ("no-op, direct, unprepared, synchronous", "test.noop", {}, 20_000, 1, False, BEHIND_A_POOLER),
    ("no-op, direct, prepared, asynchronous", "test.noop", {}, 20_000, 1, False, {}),
]
POOL_SIZE = 10
MAX_CONNECTIONS_RESERVED = 3  # superuser_reserved_connections' default


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", choices=PARTS)
    parser.add_argument("--runs", type=int, default=3, help="throughput runs (medians are reported)")
    args = parser.parse_args()
    wanted = set(args.only or PARTS)
    if "DATABASE_URL" not in os.environ:
        ensure_database("jp_fleet")
    project.setup("jp_fleet")
    from django.core.management import call_command

    from bench.lib import engine
    from tests.support import pgbouncer

    call_command("migrate", verbosity=0)
    print(
        f"PostgreSQL {engine.scalar('SHOW server_version')}, max_connections "
        f"{engine.scalar('SHOW max_connections')}; {pgbouncer.version()}; {os.cpu_count()} cores"
    )
    figures: dict[str, object] = {}
    with pgbouncer.PgBouncer(pool_size=POOL_SIZE) as bouncer:
        if "connections" in wanted:
            figures["connections"] = connections(bouncer)
        if "throughput" in wanted:
            runs = [throughput(bouncer) for _ in range(args.runs)]
            figures["throughput"] = {
                label: {key: statistics.median(run[label][key] for run in runs) for key in runs[0][label]}
                for label in runs[0]
            }
            if args.runs > 1:
                for label, row in figures["throughput"].items():
                    spread = [run[label]["per_task_jobs_per_s"] for run in runs]
                    print(
                        f"median of {args.runs}, {label}: {row['per_task_jobs_per_s']:,.1f} jobs/s per task "
                        f"({min(spread):,.1f}–{max(spread):,.1f}); PostgreSQL {row['postgres_cpu_ms_per_job']:.3f} "
                        f"ms CPU/job, PgBouncer {row['pgbouncer_cpu_ms_per_job']:.3f}"
                    )
        if "claim" in wanted:
            figures["claim"] = claim_cost()
        if "idle" in wanted:
            figures["idle"] = idle_cost(bouncer)
    if {"throughput", "idle"} <= wanted:
        model(figures, int(engine.scalar("SHOW max_connections")))
    print(json.dumps(figures, indent=1))


def _finish(ids_from: int) -> None:
    from bench.lib.engine import scalar
    from bench.lib.waiting import wait_until

    wait_until(
        lambda: (
            not scalar(
                "SELECT EXISTS (SELECT 1 FROM jobs_job WHERE id >= %s AND status IN ('queued', 'running'))",
                [ids_from],
            )
        ),
        300,
        "the jobs to finish",
        interval=0.05,
    )


def connections(bouncer) -> dict[str, dict[str, int]]:
    """Sessions of one task once each child has run a job that writes (children connect on
    first use and keep their connection)."""
    import jobs
    from bench.lib import engine, pooled
    from bench.lib.waiting import wait_until

    found: dict[str, dict[str, int]] = {}
    for lanes in ((), ("--queue", "default:2", "--queue", "ai:1")):
        for through in (None, bouncer):
            engine.reset()
            name = f"conn-{len(found)}"
            worker = pooled.start_worker(pooled.pooled_environment(through, name=name), *lanes)
            try:
                wait_until(lambda: pooled.sessions(name)["listen"] == 1, 60, "the worker to LISTEN")  # noqa: B023
                first = engine.scalar("SELECT COALESCE(max(id), 0) + 1 FROM jobs_job")
                jobs.enqueue_many("test.record", [{"sleep": 0.3} for _ in range(6)])
                jobs.enqueue_many("test.ai", [{"seconds": 0.3} for _ in range(3)])
                _finish(first)
                direct = pooled.sessions(name)
                clients = [c for c in bouncer.show("CLIENTS") if c["application_name"] == name]
            finally:
                worker.stop()
            label = (
                f"{' '.join(lanes) or '--concurrency 2 (default)'}, {'PgBouncer' if through else 'direct'}"
            )
            found[label] = {
                "postgres_listen": direct["listen"],
                "postgres_other": direct["other"],
                "pooler_clients": len(clients),
            }
            print(f"connections, {label}: {found[label]}")
    return found


def throughput(bouncer) -> dict[str, dict[str, float]]:
    from django.db import transaction

    import jobs
    from bench.lib import engine, pooled
    from bench.lib.waiting import wait_until

    found: dict[str, dict[str, float]] = {}
    for label, type_name, payload, count, tasks, through_pooler, more in LENGTHS:
        engine.reset()
        through = bouncer if through_pooler else None
        env = {**pooled.pooled_environment(through), **more}
        workers = [pooled.start_worker(env) for _ in range(tasks)]
        try:
            wait_until(lambda: engine.listeners() >= tasks, 60, "the tasks to LISTEN")  # noqa: B023
            meter = pooled.CpuMeter(through)
            meter.start()
            with transaction.atomic():
                first = engine.scalar("SELECT COALESCE(max(id), 0) + 1 FROM jobs_job")
                jobs.enqueue_many(type_name, [payload for _ in range(count)])
                start = time.perf_counter()
            _finish(first)
            elapsed = time.perf_counter() - start
            meter.stop()
        finally:
            for worker in workers:
                worker.stop()
        found[label] = {
            "tasks": tasks,
            "jobs": count,
            "per_task_jobs_per_s": count / elapsed / tasks,
            "postgres_cpu_ms_per_job": meter.database / count * 1000,
            "pgbouncer_cpu_ms_per_job": meter.pooler / count * 1000,
        }
        print(
            f"throughput, {label} jobs: {count / elapsed / tasks:,.1f} jobs/s per task ({tasks} tasks); "
            f"PostgreSQL {meter.database / count * 1000:.3f} ms CPU/job, PgBouncer {meter.pooler / count * 1000:.3f}"
        )
    return found


def claim_cost(runs: int = 30) -> dict[str, float]:
    """Median execution and planning time of the claim statement (ms), 10,000 due jobs."""
    from django.db import connection, transaction

    import jobs
    from bench.lib import engine
    from jobs.drivers import postgres

    engine.reset()
    jobs.enqueue_many("test.noop", [{} for _ in range(10_000)])
    engine.scalar("SELECT count(*) FROM jobs_job")  # warm
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE jobs_job")
    found: dict[str, float] = {}
    for limit in (1, 16):
        timings, plannings = [], []
        for _ in range(runs):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "EXPLAIN (ANALYZE, FORMAT JSON) " + postgres.CLAIM_ONE_QUEUE,
                    {"worker": "bench", "queue": "default", "limit": limit},
                )
                plan = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                timings.append(plan[0]["Execution Time"])
                plannings.append(plan[0]["Planning Time"])
                transaction.set_rollback(True)
        found[f"claim_{limit}_execution_ms"] = statistics.median(timings)
        found[f"claim_{limit}_planning_ms"] = statistics.median(plannings)
        print(
            f"claim statement, batch of {limit}: execution {statistics.median(timings):.3f} ms, "
            f"planning {statistics.median(plannings):.3f} ms (median of {runs})"
        )
    return found


def idle_cost(bouncer, tasks: int = 8, seconds: float = 15.0) -> dict[str, float]:
    from bench.lib import engine, pooled
    from bench.lib.waiting import wait_until

    engine.reset()
    workers = [
        pooled.start_worker(pooled.pooled_environment(bouncer, name=f"idle-{n}")) for n in range(tasks)
    ]
    try:
        wait_until(lambda: engine.listeners() >= tasks, 60, "the tasks to LISTEN")
        time.sleep(2.0)  # start-up settles; the measured span follows
        meter = pooled.CpuMeter(bouncer)
        meter.start()
        time.sleep(seconds)  # the measured span itself
        meter.stop()
    finally:
        for worker in workers:
            worker.stop()
    found = {
        "postgres_cpu_ms_per_task_s": meter.database / tasks / seconds * 1000,
        "pgbouncer_cpu_ms_per_task_s": meter.pooler / tasks / seconds * 1000,
    }
    print(
        f"idle task: PostgreSQL {found['postgres_cpu_ms_per_task_s']:.3f} ms CPU/s, "
        f"PgBouncer {found['pgbouncer_cpu_ms_per_task_s']:.3f} ms CPU/s ({tasks} tasks, {seconds:.0f} s)"
    )
    return found


def model(figures: dict[str, object], max_connections: int) -> None:
    """Tasks at which one PostgreSQL core, PgBouncer's one thread, or the connections run out."""
    rates = figures["throughput"]
    assert isinstance(rates, dict)
    usable = max_connections - MAX_CONNECTIONS_RESERVED
    print(f"\nmodel (per PostgreSQL core; {usable} usable connections of {max_connections}):")
    for label, row in rates.items():
        per_task = row["per_task_jobs_per_s"]
        by_postgres = 1000 / (per_task * row["postgres_cpu_ms_per_job"])
        by_pooler = (
            1000 / (per_task * row["pgbouncer_cpu_ms_per_job"])
            if row["pgbouncer_cpu_ms_per_job"]
            else math.inf
        )
        print(
            f"  {label}: {per_task:,.1f} jobs/s per task; one PostgreSQL core saturates at "
            f"{by_postgres:,.1f} tasks, PgBouncer's thread at {by_pooler:,.1f}"
        )
    print(
        f"  connections: direct, {usable // 4} tasks at concurrency 2; through PgBouncer with LISTEN direct, "
        f"{usable - POOL_SIZE} (pool of {POOL_SIZE}); polling, not bound by connections"
    )


if __name__ == "__main__":
    main()
