"""Our engine under measurement: ``manage.py runworker`` processes on the benchmark's
database, and the figures bench/throughput.py and bench/peers/ours_bench.py report.

Needs Django set up first (``bench.lib.project.setup``). Every measurement starts from
empty job tables.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
from django.db import connection, transaction

import jobs
from bench.lib.fill import history
from bench.lib.processes import Pool, cpu_seconds, rss_kib
from bench.lib.project import ROOT
from bench.lib.waiting import wait_until
from tests.support.tcp_proxy import TcpProxy

NOOP = "test.noop"


def reset() -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE")
        cursor.execute("VACUUM ANALYZE jobs_job")


def scalar(query: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0]


def listeners() -> int:
    """Sessions of this database in LISTEN: one per running worker."""
    return scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
    )


class Workers(Pool):
    """``count`` runworker processes with LOG_LEVEL=WARNING (the README's advice for
    throughput); ready once each one LISTENs."""

    def __init__(self, count: int, *args: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "manage.py", "runworker", *args]
        super().__init__([command] * count, ROOT, {**os.environ, "LOG_LEVEL": "WARNING", **(env or {})})
        try:
            wait_until(lambda: self.alive() and listeners() >= count, 60, "workers to start")
        except BaseException:
            super().stop()
            raise

    def stop(self, grace: float = 60.0) -> list[int | None]:
        codes = super().stop(grace)
        wait_until(lambda: listeners() == 0, 30, "workers to disconnect")
        return codes


def enqueue_one_by_one(count: int, producers: int = 1, atomic: bool = False) -> float:
    """Jobs/s of ``jobs.enqueue`` with each job in its own transaction (autocommit, or an
    explicit ``transaction.atomic()`` block: two more round trips), from ``producers``
    threads at once, each with its own connection like a web server's threads."""
    reset()

    def produce(share: int) -> None:
        try:
            for _ in range(share):
                if atomic:
                    with transaction.atomic():
                        jobs.enqueue(NOOP, {})
                else:
                    jobs.enqueue(NOOP, {})
        finally:
            connection.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(producers) as pool:
        list(pool.map(produce, [count // producers] * producers))
    return count // producers * producers / (time.perf_counter() - start)


def commit_floor(count: int) -> float:
    """The same INSERT + COMMIT in bare psycopg, one producer: what the disk's flush allows."""
    reset()
    params = {**connection.get_connection_params()}
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as raw:
        start = time.perf_counter()
        for _ in range(count):
            raw.execute(
                "INSERT INTO jobs_job (type, queue, priority, status, payload, attempts, max_attempts,"
                " progress_message, error, message) VALUES ('test.noop', 'default', 2, 'queued', '{}',"
                " 0, 3, '', '', '')"
            )
        return count / (time.perf_counter() - start)


def enqueue_bulk(count: int) -> float:
    reset()
    start = time.perf_counter()
    with transaction.atomic():
        jobs.enqueue_many(NOOP, ({} for _ in range(count)))
    return count / (time.perf_counter() - start)


def drained(first: int, last: int) -> bool:
    """Are jobs ``first``..``last`` all finished?

    Polled every 5 ms, so it must cost the database next to nothing whatever else the
    table holds: a count (or a planner's choice of a sequential scan over a million rows)
    would compete with the workers it measures. Jobs are claimed in id order, so the last
    one is among the last to finish: look it up by primary key, and only once it is done,
    check the whole range.
    """
    if scalar("SELECT status IN ('queued', 'running') FROM jobs_job WHERE id = %s", [last]):
        return False
    return not scalar(
        "SELECT EXISTS (SELECT 1 FROM jobs_job WHERE id BETWEEN %s AND %s AND status IN ('queued', 'running'))",
        [first, last],
    )


#: A drain's workers give the queue its own lane with both slots. A plain ``runworker``
#: serves every queue and keeps one of its two slots for the queues other than the busiest
#: (its fair share), which a drain of one queue would leave idle: ``shared=True`` measures
#: that.
DRAIN_LANE = ("--queue", "default:2")


def drain(count: int, workers: int, backlog: tuple[int, int] = (0, 0), *, shared: bool = False) -> float:
    """Jobs/s from the commit of ``count`` queued jobs until none of them is left.

    ``backlog`` = (finished, waiting) rows put in the table first (see ``fill.history``);
    ``shared``: plain ``runworker`` processes (every queue, fair share) instead of
    ``DRAIN_LANE``.
    """
    reset()
    if any(backlog):
        history(*backlog)
    pool = Workers(workers) if shared else Workers(workers, *DRAIN_LANE)
    try:
        first = scalar("SELECT COALESCE(max(id), 0) + 1 FROM jobs_job")
        with transaction.atomic():
            jobs.enqueue_many(NOOP, ({} for _ in range(count)))
            last = scalar("SELECT max(id) FROM jobs_job")
            start = time.perf_counter()
        wait_until(lambda: drained(first, last), 600, "the queue to drain", interval=0.005)
        elapsed = time.perf_counter() - start
    finally:
        pool.stop()
    done = scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'")
    if done != count + backlog[0]:
        raise SystemExit(f"Drain lost jobs: {done - backlog[0]} of {count} succeeded.")
    return count / elapsed


def _stamps(path: str) -> list[float]:
    """Milliseconds from enqueue to start, from the lines test.stamp jobs appended."""
    lines = [line.split() for line in Path(path).read_text().splitlines()]
    return [(float(started) - float(t0)) * 1000 for t0, started in lines]


def wake_up(samples: int, gap: float, type_name: str = "test.stamp") -> list[float]:
    """Milliseconds from the enqueue call to the job's start, one idle worker."""
    reset()
    with tempfile.NamedTemporaryFile("w", suffix=".stamps", delete=False) as handle:
        path = handle.name
    pool = Workers(1)
    try:
        for _ in range(samples):
            jobs.enqueue(type_name, {"path": path, "t0": time.time()})
            time.sleep(gap)
        wait_until(lambda: len(Path(path).read_text().splitlines()) >= samples, 30, "stamps")
    finally:
        pool.stop()
    latencies = _stamps(path)
    os.unlink(path)
    return latencies


def idle_cpu(seconds: float) -> float:
    """Percent of one core an idle worker (supervisor + children) uses."""
    reset()
    pool = Workers(1)
    try:
        time.sleep(1.0)  # let start-up settle; this is the measured quantity, not a wait
        before = cpu_seconds(pool.pids())
        time.sleep(seconds)
        used = cpu_seconds(pool.pids()) - before
    finally:
        pool.stop()
    return used / seconds * 100


def fairness(backlog: int) -> list[float]:
    """With ``backlog`` jobs waiting in default, how soon an ai job starts (ms)."""
    reset()
    with tempfile.NamedTemporaryFile("w", suffix=".stamps", delete=False) as handle:
        path = handle.name
    jobs.enqueue_many("test.sleep", ({"seconds": 0.05} for _ in range(backlog)))
    pool = Workers(1, "--queue", "default:1", "--queue", "ai:1")
    try:
        wait_until(
            lambda: scalar("SELECT count(*) FROM jobs_job WHERE status = 'running'") >= 1, 30, "default busy"
        )
        for _ in range(20):
            jobs.enqueue("test.stamp_ai", {"path": path, "t0": time.time()})
            time.sleep(0.1)
        wait_until(lambda: len(Path(path).read_text().splitlines()) >= 20, 30, "ai stamps")
    finally:
        pool.stop()
    latencies = _stamps(path)
    os.unlink(path)
    return latencies


def recovery(total: int, workers: int, outage: float = 1.0) -> float:
    """Seconds from the end of a database outage until the workers have finished 100 more jobs.

    The workers reach PostgreSQL through a TCP proxy; while they drain ``total`` short jobs
    (``test.record``, 2 ms each) the proxy breaks every connection and refuses new ones for
    ``outage`` seconds, as a restart of the server would, then lets them through again.
    The clock starts when the database is reachable again, so the figure is the workers'
    own: noticing, backing off and reconnecting. Checks that no job was lost.
    """
    reset()
    db = connection.settings_dict
    proxy = TcpProxy((db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)))
    proxy.start()
    through_proxy = f"postgres://{db['USER']}@127.0.0.1:{proxy.port}/{db['NAME']}"
    # A lease longer than the longest reconnect wait, so that no worker is taken for dead.
    env = {"DATABASE_URL": through_proxy, "JOBS_WORKER_LEASE": "20", "JOBS_REAP_AFTER": "30"}

    def succeeded() -> int:
        return scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'")

    jobs.enqueue_many("test.record", ({"sleep": 0.002} for _ in range(total)))
    pool = Workers(workers, env=env)
    try:
        wait_until(lambda: succeeded() >= total // 10, 120, "the workers to get going")
        proxy.cut()
        time.sleep(outage)  # the outage itself, not a wait for something
        proxy.start()
        back = time.perf_counter()
        resumed_at = succeeded() + 100
        wait_until(lambda: succeeded() >= resumed_at, 120, "work to resume", interval=0.005)
        elapsed = time.perf_counter() - back
        wait_until(lambda: succeeded() == total, 300, "every job to succeed", interval=0.1)
    finally:
        pool.stop()
        proxy.cut()
    return elapsed


def claim_plan() -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
            "SELECT id FROM jobs_job WHERE status = 'queued' AND queue = ANY(%s) AND run_at <= now() "
            "ORDER BY priority, run_at, id LIMIT 32 FOR UPDATE SKIP LOCKED",
            [["ai", "default"]],
        )
        return "\n".join(row[0] for row in cursor.fetchall())


def memory(total: int) -> tuple[int, int]:
    """RSS (KiB) of one worker after its first 1,000 jobs and after ``total``."""
    reset()
    pool = Workers(1)
    try:
        jobs.enqueue_many(NOOP, ({} for _ in range(total)))
        wait_until(
            lambda: scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'") >= 1000,
            120,
            "1,000 jobs",
        )
        early = rss_kib(pool.pids())
        wait_until(
            lambda: scalar("SELECT count(*) FROM jobs_job WHERE status IN ('queued', 'running')") == 0,
            1200,
            "all jobs",
            interval=0.2,
        )
        late = rss_kib(pool.pids())
    finally:
        pool.stop()
    return early, late
