"""django-tasks-db on bench/throughput.py's workload, in database ``bench_django_tasks``.

Run by bench/compare.py with bench/.peers-venv's Python from the project root
(``python -m bench.peers.django_tasks_db_bench --runs 1 --jobs N``); it prints one
``RESULT {json}`` line. Settings: bench/peers/dtdb_settings.py (persistent connections).
It recreates its database and migrates, then each measurement starts from an empty task
table (TRUNCATE). Per run:

- drain: starts 2 ``db_worker`` processes (default 1 s polling, ``--verbosity 0``), waits
  until both are connected, enqueues ``--jobs`` no-op tasks with ``Task.enqueue`` in one
  transaction and measures jobs/s from its commit until no task is READY or RUNNING
  (``harness.time_drain``), then checks they all succeeded. The workers' next poll can be up
  to 1 s away, so the figure includes that idling, as the engine's own drain includes its
  wake-up;
- wake-up: one worker, 200 tasks enqueued one by one 20 ms apart; the task appends its start
  time next to the ``t0`` it was given and we report p50 / p95 in ms (bounded below by the
  worker's polling, not by the database);
- drain including start-up: the tasks enqueued first, jobs/s from launching the 2 workers
  until none is left (``harness.time_cold_drain``);
- start-up: seconds from launching one worker until it starts a task waiting for it
  (``harness.start_up``);
- enqueue one by one: ``Task.enqueue`` of 1,000 tasks, each its own transaction;
- bulk enqueue: none. The backend has no bulk API (only ``enqueue`` / ``aenqueue``, one
  ``INSERT`` per task), so the figure is reported as absent.
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
from bench.lib.postgres import Database, peer_database, recreate_database
from bench.lib.processes import Pool
from bench.lib.project import ROOT
from bench.lib.stats import percentile
from bench.lib.waiting import wait_until

SETTINGS = "bench.peers.dtdb_settings"
DATABASE = peer_database("bench_django_tasks")
WORKER_APPLICATION_NAME = "dtdb-worker"
SINGLE = 1000  # tasks enqueued one by one

os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
os.environ.setdefault("BENCH_APPLICATION_NAME", "dtdb-bench")

import django  # noqa: E402


def setup() -> None:
    recreate_database(DATABASE)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def table() -> str:
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult._meta.db_table


def reset(db: Database) -> None:
    db.execute(f"TRUNCATE {table()}")
    db.execute(f"VACUUM ANALYZE {table()}")


def launch(count: int) -> Pool:
    """``count`` db_worker processes, started and not waited for."""
    command = [sys.executable, "-m", "django", "db_worker", "--verbosity", "0", "--no-reload"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "BENCH_APPLICATION_NAME": WORKER_APPLICATION_NAME,
    }
    return Pool([command] * count, ROOT, env)


def workers(db: Database, count: int) -> Pool:
    pool = launch(count)
    try:
        wait_until(
            lambda: pool.alive() and db.sessions(WORKER_APPLICATION_NAME) >= count,
            60,
            "db_worker processes to connect",
        )
    except BaseException:
        pool.stop()
        raise
    return pool


def unfinished(db: Database) -> int:
    return db.scalar(f"SELECT count(*) FROM {table()} WHERE status IN ('READY', 'RUNNING')")


def drain(db: Database, count: int) -> float:
    from django.db import transaction

    from bench.peers.task_functions import noop

    reset(db)
    with workers(db, 2) as pool:
        with transaction.atomic():
            for _ in range(count):
                noop.enqueue()
        elapsed = time_drain(pool, lambda: unfinished(db))
    done = db.scalar(f"SELECT count(*) FROM {table()} WHERE status = 'SUCCESSFUL'")
    if done != count:
        raise SystemExit(f"django-tasks-db drain: {done} of {count} tasks succeeded.")
    return count / elapsed


def cold_drain(db: Database, count: int) -> float:
    from django.db import transaction

    from bench.peers.task_functions import noop

    reset(db)
    with transaction.atomic():
        for _ in range(count):
            noop.enqueue()
    figure = time_cold_drain(lambda: launch(2), lambda: unfinished(db), count)
    done = db.scalar(f"SELECT count(*) FROM {table()} WHERE status = 'SUCCESSFUL'")
    if done != count:
        raise SystemExit(f"django-tasks-db drain including start-up: {done} of {count} tasks succeeded.")
    return figure


def first_job(db: Database) -> float:
    from bench.peers.task_functions import stamp_task

    reset(db)
    return start_up(lambda: launch(1), lambda path, t0: stamp_task.enqueue(path=path, t0=t0))


def enqueue_single(db: Database, count: int) -> float:
    from bench.peers.task_functions import noop

    reset(db)
    start = time.perf_counter()
    for _ in range(count):
        noop.enqueue()
    return count / (time.perf_counter() - start)


def wake_up(db: Database, samples: int, gap: float) -> list[float]:
    from bench.peers.task_functions import stamp_task

    reset(db)
    handle, path = tempfile.mkstemp(suffix=".stamps")
    os.close(handle)
    try:
        with workers(db, 1):
            for _ in range(samples):
                stamp_task.enqueue(path=path, t0=time.time())
                time.sleep(gap)
            return read_stamps(path, samples)
    finally:
        os.unlink(path)


def main() -> None:
    args = harness_arguments(__doc__)

    setup()
    from django.db import connection

    db = Database(DATABASE)
    try:
        drains, p50, p95 = [], [], []
        cold, startup, single = [], [], []
        for run in range(args.runs):
            drains.append(drain(db, args.jobs))
            cold.append(cold_drain(db, args.jobs))
            startup.append(first_job(db))
            latencies = wake_up(db, args.samples, 0.02)
            p50.append(percentile(latencies, 0.5))
            p95.append(percentile(latencies, 0.95))
            single.append(enqueue_single(db, SINGLE))
            report_run("django-tasks-db", run, drains[-1], p50[-1], p95[-1], None)
            report_start("django-tasks-db", run, startup[-1], cold[-1], single[-1])
        reset(db)
    finally:
        db.close()
        connection.close()
    emit(
        system="django-tasks-db",
        version=version("django-tasks-db"),
        drain=drains,
        p50=p50,
        p95=p95,
        bulk=None,
        cold=cold,
        startup=startup,
        single=single,
        setup="2 db_worker processes, 1 s polling, CONN_MAX_AGE=None",
    )


if __name__ == "__main__":
    main()
