"""Throughput, latency and staying power of the job engine, on PostgreSQL, with real
``manage.py runworker`` processes (child-process isolation on).

    .venv/bin/python bench/throughput.py                 # the headline figures
    .venv/bin/python bench/throughput.py --only drain --jobs 20000
    .venv/bin/python bench/throughput.py --scale         # + drain with 1M finished, 100k queued
    .venv/bin/python bench/throughput.py --memory        # + 100,000 jobs through one worker

Every figure is the median of --runs runs (default 3) with min–max. Workers run with
LOG_LEVEL=WARNING, the README's recommendation for throughput (one log line per job start
and end costs more than a no-op job). Uses the database in DATABASE_URL (default
``jp_bench``, created if missing) and wipes its job tables.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jp_bench")

import django  # noqa: E402
import psycopg  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

import jobs  # noqa: E402

NOOP = "test.noop"


# --- plumbing ---------------------------------------------------------------------------


def prepare_database() -> None:
    call_command("migrate", verbosity=0)


def reset() -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE")
        cursor.execute("VACUUM ANALYZE jobs_job")


def scalar(query: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0]


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"Timed out waiting for {what}.")
        time.sleep(interval)


class Workers:
    """``count`` runworker processes; ready once each one LISTENs."""

    def __init__(self, count: int, *args: str) -> None:
        env = {**os.environ, "LOG_LEVEL": "WARNING"}
        self.processes = [
            subprocess.Popen([sys.executable, "manage.py", "runworker", *args], cwd=ROOT, env=env)
            for _ in range(count)
        ]
        wait_until(
            lambda: (
                scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
                )
                >= count
            ),
            60,
            "workers to start",
        )

    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=60)
        wait_until(
            lambda: (
                scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
                )
                == 0
            ),
            30,
            "workers to disconnect",
        )


def process_tree(pid: int) -> list[int]:
    """A process and its descendants (the supervisor and its children)."""
    found, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.append(child)
            frontier.append(child)
    return found


def cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        for member in process_tree(pid):
            try:
                fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / ticks


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for member in process_tree(pid):
            try:
                for line in Path(f"/proc/{member}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                continue
    return total


def summary(values: list[float], unit: str, digits: int = 0) -> str:
    median = statistics.median(values)
    return f"{median:,.{digits}f} {unit} (min {min(values):,.{digits}f}, max {max(values):,.{digits}f}, n={len(values)})"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


# --- the measurements -------------------------------------------------------------------


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


def drain(count: int, workers: int, history: tuple[int, int] = (0, 0)) -> float:
    """Jobs/s from the commit of ``count`` queued jobs until none of them is left.

    ``history`` = (finished, waiting) rows put in the table first (see ``fill_history``).
    """
    reset()
    if any(history):
        fill_history(*history)
    pool = Workers(workers)
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
    if done != count + history[0]:
        raise SystemExit(f"Drain lost jobs: {done - history[0]} of {count} succeeded.")
    return count / elapsed


def wake_up(
    samples: int, gap: float, type_name: str = "test.stamp", worker_args: tuple[str, ...] = ()
) -> list[float]:
    """Milliseconds from the enqueue call to the job's start, one idle worker."""
    reset()
    with tempfile.NamedTemporaryFile("w", suffix=".stamps", delete=False) as handle:
        path = handle.name
    pool = Workers(1, *worker_args)
    try:
        for _ in range(samples):
            jobs.enqueue(type_name, {"path": path, "t0": time.time()})
            time.sleep(gap)
        wait_until(lambda: len(Path(path).read_text().splitlines()) >= samples, 30, "stamps")
    finally:
        pool.stop()
    stamps = [line.split() for line in Path(path).read_text().splitlines()]
    os.unlink(path)
    return [(float(started) - float(t0)) * 1000 for t0, started in stamps]


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
    stamps = [line.split() for line in Path(path).read_text().splitlines()]
    os.unlink(path)
    return [(float(started) - float(t0)) * 1000 for t0, started in stamps]


def fill_history(finished: int, queued: int) -> None:
    """``finished`` succeeded jobs and ``queued`` future-dated jobs (not claimable now)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                                  progress_message, error, message, created_at, started_at, finished_at)
            SELECT 'test.noop', 'default', 2, 'succeeded', '{}', now() - interval '1 hour', 1, 3, '', '', '',
                   now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
              FROM generate_series(1, %s)
            """,
            [finished],
        )
        cursor.execute(
            """
            INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,
                                  progress_message, error, message)
            SELECT 'test.noop', 'default', 2, 'queued', '{}', now() + interval '1 day', 0, 3, '', '', ''
              FROM generate_series(1, %s)
            """,
            [queued],
        )
        cursor.execute("VACUUM ANALYZE jobs_job")
        # Flush the fill's WAL now, so the checkpoint it would trigger does not land in the
        # middle of the measured drain.
        cursor.execute("CHECKPOINT")


def claim_plan() -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
            "SELECT id FROM jobs_job WHERE status = 'queued' AND queue = ANY(%s) AND run_at <= now() "
            "ORDER BY priority, run_at, id LIMIT 32 FOR UPDATE SKIP LOCKED",
            [["ai", "default"]],
        )
        return "\n".join(row[0] for row in cursor.fetchall())


def memory(total: int, workers_args: tuple[str, ...] = ()) -> tuple[int, int]:
    """RSS (KiB) of one worker after its first 1,000 jobs and after ``total``."""
    reset()
    pool = Workers(1, *workers_args)
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


# --- main -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per drain run")
    parser.add_argument("--workers", type=int, default=2, help="runworker processes (one per core)")
    parser.add_argument(
        "--only", action="append", choices=["enqueue", "bulk", "drain", "latency", "idle", "fairness", "plan"]
    )
    parser.add_argument("--scale", action="store_true", help="also drain with 1M finished + 100k queued rows")
    parser.add_argument("--memory", action="store_true", help="also run 100,000 jobs through one worker")
    args = parser.parse_args()
    wanted = set(args.only or ["enqueue", "bulk", "drain", "latency", "idle", "fairness"])
    prepare_database()
    print(f"PostgreSQL: {scalar('SHOW server_version')}; {os.cpu_count()} cores; {args.workers} workers")

    if "enqueue" in wanted:
        floor = [commit_floor(2000) for _ in range(args.runs)]
        print(
            "bare INSERT+COMMIT:   " + summary(floor, "jobs/s") + "  (psycopg, 1 producer: the flush floor)"
        )
        for producers, atomic in ((1, False), (1, True), (4, False)):
            rates = [enqueue_one_by_one(2000 * producers, producers, atomic) for _ in range(args.runs)]
            how = "in atomic()" if atomic else "autocommit"
            print(f"enqueue one by one:   {summary(rates, 'jobs/s')}  ({producers} producer(s), {how})")
    if "bulk" in wanted:
        rates = [enqueue_bulk(100_000) for _ in range(args.runs)]
        print("enqueue bulk:         " + summary(rates, "jobs/s"))
    if "drain" in wanted:
        rates = [drain(args.jobs, args.workers) for _ in range(args.runs)]
        print(f"drain {args.jobs:,} no-ops:  " + summary(rates, "jobs/s"))
    if "latency" in wanted:
        runs = [wake_up(200, 0.02) for _ in range(args.runs)]
        p50 = [percentile(run, 0.5) for run in runs]
        p95 = [percentile(run, 0.95) for run in runs]
        print("idle wake-up p50:     " + summary(p50, "ms", 2))
        print("idle wake-up p95:     " + summary(p95, "ms", 2))
    if "idle" in wanted:
        print("idle worker CPU:      " + summary([idle_cpu(10.0)], "% of a core", 2))
    if "fairness" in wanted:
        runs = [fairness(10_000) for _ in range(args.runs)]
        print("ai start, 10k waiting in default: p50 " + summary([percentile(r, 0.5) for r in runs], "ms", 1))
        print("                                  max " + summary([max(r) for r in runs], "ms", 1))
    if "plan" in wanted or args.scale:
        reset()
        fill_history(1_000_000, 100_000)
        print("claim plan with 1M finished + 100k queued (not due):\n" + claim_plan())
    if args.scale:
        empty = [drain(args.jobs, args.workers) for _ in range(args.runs)]
        # The 100,000 waiting jobs are due tomorrow, so only the measured ones are claimable
        # and every claim has to find them past the others.
        big = [drain(args.jobs, args.workers, history=(1_000_000, 100_000)) for _ in range(args.runs)]
        print("drain, empty table:   " + summary(empty, "jobs/s"))
        print("drain, 1M + 100k:     " + summary(big, "jobs/s"))
        print(f"ratio: {statistics.median(big) / statistics.median(empty):.2f}")
    if args.memory:
        early, late = memory(100_000)
        print(
            f"worker RSS after 1,000 jobs: {early:,} KiB; after 100,000: {late:,} KiB ({late / early - 1:+.1%})"
        )


if __name__ == "__main__":
    main()
