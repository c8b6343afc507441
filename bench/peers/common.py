"""Plumbing shared by the harnesses in bench/peers/: worker pools that always go away,
bounded waits, throwaway databases and the one line of JSON each harness prints.

Standard library and psycopg 3 only, so it imports in the project venv and in
bench/.peers-venv alike.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg

SERVER = os.environ.get("BENCH_PG_SERVER", "postgresql://postgres@127.0.0.1:5432")
RESULT_PREFIX = "RESULT "


def dsn(database: str, application_name: str | None = None) -> str:
    url = f"{SERVER}/{database}"
    return f"{url}?application_name={application_name}" if application_name else url


def recreate_database(name: str) -> None:
    """Drop and create ``name`` (only ever one of the benchmark's own databases)."""
    with psycopg.connect(dsn("postgres"), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def ensure_database(name: str) -> None:
    with psycopg.connect(dsn("postgres"), autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


class Database:
    """An autocommit connection for polling the job tables."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.connection = psycopg.connect(dsn(name, "bench-harness"), autocommit=True)

    def scalar(self, query: str, params: Sequence | None = None):
        return self.connection.execute(query, params or []).fetchone()[0]

    def execute(self, query: str, params: Sequence | None = None) -> None:
        self.connection.execute(query, params or [])

    def listeners(self) -> int:
        return self.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND query ILIKE 'LISTEN %%'",
            [self.name],
        )

    def sessions(self, application_name: str) -> int:
        return self.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
            [self.name, application_name],
        )

    def close(self) -> None:
        self.connection.close()


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"Timed out after {timeout:.0f} s waiting for {what}.")
        time.sleep(interval)


def time_drain(pool: Pool, unfinished: Callable[[], int], timeout: float = 600) -> float:
    """Seconds until ``unfinished()`` is 0, polled every 5 ms at first (as bench/throughput.py
    does) and then every 0.5 % of the time so far, up to 50 ms: the figure stays within about
    0.5 % while the poll's own ``count(*)`` does not load a slow system's database 200 times
    a second for the whole drain."""
    start = time.perf_counter()
    deadline = start + timeout
    while True:
        pool.alive()
        if unfinished() == 0:
            return time.perf_counter() - start
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError(f"Timed out after {timeout:.0f} s waiting for the queue to drain.")
        time.sleep(min(0.05, max(0.005, (now - start) * 0.005)))


class Pool:
    """Worker processes in the harness's own process group (bench/compare.py kills that group
    if a harness overruns its deadline).

    ``stop`` sends SIGTERM, waits up to ``grace`` seconds, then SIGKILLs what is left.
    Use it as a context manager so the workers go away on any error.
    """

    def __init__(self, commands: list[list[str]], cwd: Path, env: dict[str, str]) -> None:
        self.processes: list[subprocess.Popen] = []
        try:
            for command in commands:
                self.processes.append(subprocess.Popen(command, cwd=cwd, env=env))
        except BaseException:
            self.stop()
            raise

    def alive(self) -> bool:
        """True, or RuntimeError if a worker has exited (so waits on it fail fast)."""
        for process in self.processes:
            if process.poll() is not None:
                raise RuntimeError(f"worker {process.args} exited with {process.returncode}")
        return True

    def _signal(self, signum: int) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signum)

    def stop(self, grace: float = 20.0) -> None:
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        self._signal(signal.SIGKILL)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so that ``finally`` blocks stop the workers."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def percentile(values: Sequence[float], fraction: float) -> float:
    """Same definition as bench/throughput.py's ``percentile``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def read_stamps(path: str, expected: int, timeout: float = 60.0) -> list[float]:
    """Wake-up latencies in ms from a file of "t0 started" lines (epoch seconds)."""
    wait_until(
        lambda: Path(path).exists() and len(Path(path).read_text().splitlines()) >= expected,
        timeout,
        f"{expected} stamps in {path}",
    )
    lines = [line.split() for line in Path(path).read_text().splitlines()]
    return [(float(started) - float(t0)) * 1000 for t0, started in lines]


def stamp(path: str, t0: float) -> None:
    """What the wake-up task does first: append "t0 now" to ``path``."""
    started = time.time()
    with open(path, "a") as handle:
        handle.write(f"{t0!r} {started!r}\n")


def emit(**figures) -> None:
    """The harness's result: one JSON line that bench/compare.py parses."""
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


def describe(values: Sequence[float], unit: str, digits: int = 0) -> str:
    median = statistics.median(values)
    return f"{median:,.{digits}f} {unit} (min {min(values):,.{digits}f}, max {max(values):,.{digits}f})"


def harness_arguments(doc: str | None) -> argparse.Namespace:
    """The options every harness takes; also makes SIGTERM exit cleanly."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=200, help="wake-up samples per run")
    args = parser.parse_args()
    exit_on_sigterm()
    return args


def report_run(system: str, run: int, drain: float, p50: float, p95: float, bulk: float | None) -> None:
    """One progress line per run, on stderr (stdout carries the JSON result)."""
    bulk_text = f"{bulk:,.0f} jobs/s" if bulk is not None else "none"
    print(
        f"{system} run {run + 1}: drain {drain:,.0f} jobs/s, wake-up p50 {p50:.2f} ms "
        f"p95 {p95:.2f} ms, bulk {bulk_text}",
        file=sys.stderr,
        flush=True,
    )
