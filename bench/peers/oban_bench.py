"""oban-py (the free edition, the Python port of Elixir's Oban) on bench/throughput.py's
workload, in database ``bench_oban``.

Run by bench/compare.py with bench/.peers-venv's Python from the project root
(``python -m bench.peers.oban_bench --runs 1 --jobs N``); it prints one ``RESULT {json}``
line. It recreates its database and installs oban-py's schema (``oban.schema.install_sql``),
then each measurement starts from an empty job table (TRUNCATE). The workers are what its
documentation recommends: ``oban start --queues default:10`` (its CLI; one process per core,
so two here), with ``--cron-modules`` naming the workers' module (else it greps the whole
project for cron workers at every start) and ``--log-level WARNING`` like our workers (at
INFO it logs every job). The jobs are ``bench/peers/oban_app.py``'s ``async`` workers. Per run:

- drain (steady): starts 2 workers, waits until both LISTEN, ``enqueue_many`` of ``--jobs``
  no-op jobs in one call and jobs/s from its return until none is available or executing
  (``harness.time_drain``), then checks they all completed;
- drain including start-up: the same jobs enqueued first, jobs/s from launching the 2
  workers until none is left (``harness.time_cold_drain``);
- start-up: seconds from launching one worker until it starts a job waiting for it
  (``harness.start_up``);
- wake-up: one worker, 200 jobs enqueued one by one 20 ms apart, ms from the enqueue call to
  the job's start, p50 / p95;
- enqueue: ``Worker.enqueue`` one by one (each its own transaction), 1,000 jobs; and
  ``enqueue_many`` of ``--jobs`` jobs in one call (bulk), with no worker running.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from importlib.metadata import version

from bench.lib.harness import (
    emit,
    harness_arguments,
    read_stamps,
    report_run,
    report_start,
    start_up,
    time_cold_drain,
    time_drain,
)
from bench.lib.postgres import Database, dsn, recreate_database
from bench.lib.processes import Pool
from bench.lib.project import ROOT
from bench.lib.stats import percentile
from bench.lib.waiting import wait_until
from bench.peers.oban_app import DATABASE, Noop, Stamp

LIMIT = 10  # per queue and process, as oban-py's documentation sets it
SINGLE = 1000  # jobs enqueued one by one

loop = asyncio.new_event_loop()


def run[T](coroutine) -> T:
    return loop.run_until_complete(coroutine)


def client():
    """An Oban instance in client mode (no queues): what an application enqueues with."""
    from oban import Oban
    from psycopg_pool import AsyncConnectionPool

    async def open_pool() -> AsyncConnectionPool:
        pool = AsyncConnectionPool(dsn(DATABASE, "oban-bench"), min_size=1, max_size=2, open=False)
        await pool.open()
        return pool

    pool = run(open_pool())
    return Oban(pool=pool), pool


def reset(db: Database) -> None:
    db.execute("TRUNCATE oban_jobs RESTART IDENTITY")
    db.execute("VACUUM ANALYZE oban_jobs")


def launch(count: int) -> Pool:
    command = [
        sys.executable, "-m", "oban", "start",
        "--dsn", dsn(DATABASE, "oban-worker"),
        "--queues", f"default:{LIMIT}",
        "--cron-modules", "bench.peers.oban_app",
        "--log-level", "WARNING",
    ]  # fmt: skip
    return Pool([command] * count, ROOT, {**os.environ})


def workers(db: Database, count: int) -> Pool:
    pool = launch(count)
    try:
        wait_until(lambda: pool.alive() and db.listeners() >= count, 60, "oban workers to LISTEN")
    except BaseException:
        pool.stop()
        raise
    return pool


def unfinished(db: Database) -> int:
    return db.scalar(
        "SELECT count(*) FROM oban_jobs WHERE state IN ('available', 'executing', 'scheduled', 'retryable')"
    )


def check_done(db: Database, count: int, what: str) -> None:
    done = db.scalar("SELECT count(*) FROM oban_jobs WHERE state = 'completed'")
    if done != count:
        raise SystemExit(f"oban-py {what}: {done} of {count} jobs completed.")


def enqueue_noops(oban, count: int) -> None:
    run(oban.enqueue_many(Noop.new({}) for _ in range(count)))


def drain(db: Database, oban, count: int) -> float:
    reset(db)
    with workers(db, 2) as pool:
        enqueue_noops(oban, count)
        elapsed = time_drain(pool, lambda: unfinished(db))
    check_done(db, count, "drain")
    return count / elapsed


def cold_drain(db: Database, oban, count: int) -> float:
    reset(db)
    enqueue_noops(oban, count)
    figure = time_cold_drain(lambda: launch(2), lambda: unfinished(db), count)
    check_done(db, count, "drain including start-up")
    return figure


def first_job(db: Database, oban) -> float:
    reset(db)
    return start_up(
        lambda: launch(1), lambda path, t0: run(oban.enqueue(Stamp.new({"path": path, "t0": t0})))
    )


def wake_up(db: Database, oban, samples: int, gap: float) -> list[float]:
    reset(db)
    handle, path = tempfile.mkstemp(suffix=".stamps")
    os.close(handle)
    try:
        with workers(db, 1):
            for _ in range(samples):
                run(oban.enqueue(Stamp.new({"path": path, "t0": time.time()})))
                time.sleep(gap)
            return read_stamps(path, samples)
    finally:
        os.unlink(path)


def enqueue_single(db: Database, count: int) -> float:
    reset(db)
    start = time.perf_counter()
    for _ in range(count):
        run(Noop.enqueue({}))
    return count / (time.perf_counter() - start)


def bulk(db: Database, oban, count: int) -> float:
    reset(db)
    start = time.perf_counter()
    enqueue_noops(oban, count)
    return count / (time.perf_counter() - start)


def main() -> None:
    args = harness_arguments(__doc__)
    from oban.schema import install_sql

    recreate_database(DATABASE)
    db = Database(DATABASE)
    db.execute(install_sql())
    oban, pool = client()
    try:
        figures: dict[str, list[float]] = {
            key: [] for key in ("drain", "p50", "p95", "bulk", "cold", "startup", "single")
        }
        for number in range(args.runs):
            figures["drain"].append(drain(db, oban, args.jobs))
            figures["cold"].append(cold_drain(db, oban, args.jobs))
            figures["startup"].append(first_job(db, oban))
            latencies = wake_up(db, oban, args.samples, 0.02)
            figures["p50"].append(percentile(latencies, 0.5))
            figures["p95"].append(percentile(latencies, 0.95))
            figures["single"].append(enqueue_single(db, SINGLE))
            figures["bulk"].append(bulk(db, oban, args.jobs))
            report_run(
                "oban-py",
                number,
                figures["drain"][-1],
                figures["p50"][-1],
                figures["p95"][-1],
                figures["bulk"][-1],
            )
            report_start(
                "oban-py", number, figures["startup"][-1], figures["cold"][-1], figures["single"][-1]
            )
        reset(db)
    finally:
        run(pool.close())
        db.close()
    emit(
        system="oban-py",
        version=version("oban"),
        **figures,
        setup=f"2 x oban start --queues default:{LIMIT}, LISTEN/NOTIFY, async workers, log level WARNING",
    )


if __name__ == "__main__":
    main()
