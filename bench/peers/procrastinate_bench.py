"""Procrastinate on bench/throughput.py's workload, in database ``bench_procrastinate``.

Run by bench/compare.py with bench/.peers-venv's Python from the project root
(``python -m bench.peers.procrastinate_bench --runs 1 --jobs N``); it prints one
``RESULT {json}`` line. It recreates its database and applies the schema, then each
measurement starts from empty job tables (TRUNCATE). Per run:

- drain: starts 2 ``procrastinate worker --concurrency 4`` processes (LISTEN/NOTIFY on, the
  default; log level WARNING like our workers), waits until both LISTEN, ``batch_defer``s
  ``--jobs`` no-op jobs in one call and measures jobs/s from the return of that call (its
  commit) until no job is ``todo`` or ``doing`` (``harness.time_drain``), then checks they
  all succeeded;
- wake-up: one worker (concurrency 4), 200 jobs deferred one by one 20 ms apart; the task
  appends its start time next to the ``t0`` it was given (epoch seconds); p50 / p95 in ms;
- drain including start-up: the jobs deferred first, jobs/s from launching the 2 workers
  until none is left (``harness.time_cold_drain``);
- start-up: seconds from launching one worker until it starts a job waiting for it
  (``harness.start_up``);
- enqueue: ``defer`` one by one (1,000 jobs), and ``batch_defer`` of ``--jobs`` jobs (bulk),
  with no worker running, jobs/s.

The app and its tasks are in bench/peers/procrastinate_app.py: plain ``def`` tasks, as in a
Django project (Procrastinate runs them in a thread); PROCRASTINATE_BENCH_ASYNC=1 makes
them ``async def``.
"""

from __future__ import annotations

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
from bench.lib.postgres import Database, recreate_database
from bench.lib.processes import Pool
from bench.lib.project import ROOT
from bench.lib.stats import percentile
from bench.lib.waiting import wait_until
from bench.peers.procrastinate_app import ASYNC, DATABASE, app, noop, stamp_task

SINGLE = 1000  # jobs deferred one by one


def reset(db: Database) -> None:
    db.execute(
        "TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_periodic_defers, "
        "procrastinate_workers RESTART IDENTITY CASCADE"
    )
    db.execute("VACUUM ANALYZE procrastinate_jobs")


def launch(count: int, concurrency: int) -> Pool:
    """``count`` workers, started and not waited for."""
    command = [
        sys.executable,
        "-m",
        "procrastinate",
        "--app",
        "bench.peers.procrastinate_app.app",
        "--log-level",
        "warning",
        "worker",
        "--concurrency",
        str(concurrency),
    ]
    return Pool([command] * count, ROOT, {**os.environ})


def workers(db: Database, count: int, concurrency: int) -> Pool:
    pool = launch(count, concurrency)
    try:
        wait_until(lambda: pool.alive() and db.listeners() >= count, 60, "Procrastinate workers to LISTEN")
    except BaseException:
        pool.stop()
        raise
    return pool


def unfinished(db: Database) -> int:
    return db.scalar("SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')")


def drain(db: Database, count: int) -> float:
    reset(db)
    with workers(db, 2, 4) as pool:
        noop.batch_defer(*({} for _ in range(count)))
        elapsed = time_drain(pool, lambda: unfinished(db))
    done = db.scalar("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'")
    if done != count:
        raise SystemExit(f"Procrastinate drain: {done} of {count} jobs succeeded.")
    return count / elapsed


def cold_drain(db: Database, count: int) -> float:
    reset(db)
    noop.batch_defer(*({} for _ in range(count)))
    figure = time_cold_drain(lambda: launch(2, 4), lambda: unfinished(db), count)
    done = db.scalar("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'")
    if done != count:
        raise SystemExit(f"Procrastinate drain including start-up: {done} of {count} jobs succeeded.")
    return figure


def first_job(db: Database) -> float:
    reset(db)
    return start_up(lambda: launch(1, 4), lambda path, t0: stamp_task.defer(path=path, t0=t0))


def enqueue_single(db: Database, count: int) -> float:
    reset(db)
    start = time.perf_counter()
    for _ in range(count):
        noop.defer()
    return count / (time.perf_counter() - start)


def wake_up(db: Database, samples: int, gap: float) -> list[float]:
    reset(db)
    handle, path = tempfile.mkstemp(suffix=".stamps")
    os.close(handle)
    try:
        with workers(db, 1, 4):
            for _ in range(samples):
                stamp_task.defer(path=path, t0=time.time())
                time.sleep(gap)
            return read_stamps(path, samples)
    finally:
        os.unlink(path)


def bulk(db: Database, count: int) -> float:
    reset(db)
    start = time.perf_counter()
    noop.batch_defer(*({} for _ in range(count)))
    return count / (time.perf_counter() - start)


def main() -> None:
    args = harness_arguments(__doc__)

    recreate_database(DATABASE)
    app.open()
    db = Database(DATABASE)
    try:
        app.schema_manager.apply_schema()
        drains, p50, p95, bulks = [], [], [], []
        cold, startup, single = [], [], []
        for run in range(args.runs):
            drains.append(drain(db, args.jobs))
            cold.append(cold_drain(db, args.jobs))
            startup.append(first_job(db))
            latencies = wake_up(db, args.samples, 0.02)
            p50.append(percentile(latencies, 0.5))
            p95.append(percentile(latencies, 0.95))
            single.append(enqueue_single(db, SINGLE))
            bulks.append(bulk(db, args.jobs))
            report_run("procrastinate", run, drains[-1], p50[-1], p95[-1], bulks[-1])
            report_start("procrastinate", run, startup[-1], cold[-1], single[-1])
        reset(db)
    finally:
        db.close()
        app.close()
    emit(
        system="procrastinate",
        version=version("procrastinate"),
        drain=drains,
        p50=p50,
        p95=p95,
        bulk=bulks,
        cold=cold,
        startup=startup,
        single=single,
        setup=f"2 workers x concurrency 4, LISTEN/NOTIFY, {'async' if ASYNC else 'sync'} tasks",
    )


if __name__ == "__main__":
    main()
