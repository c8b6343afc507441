"""The contract between bench/compare.py and each system's harness (bench/peers/): the
options a harness takes, its progress lines, and the one ``RESULT {json}`` line it prints;
plus the two measurements every harness makes the same way (drain time, wake-up stamps)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.lib.processes import Pool
from bench.lib.waiting import wait_until

RESULT_PREFIX = "RESULT "


def harness_arguments(doc: str | None) -> argparse.Namespace:
    """The options every harness takes; also makes SIGTERM exit cleanly."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=200, help="wake-up samples per run")
    args = parser.parse_args()
    # SIGTERM (compare.py's deadline) becomes SystemExit, so ``finally`` blocks stop the workers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    return args


def emit(**figures: object) -> None:
    """The harness's result: one JSON line that bench/compare.py parses."""
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


def parse_result(output: str) -> dict | None:
    """The figures in a harness's output (its last RESULT line), or None."""
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line.removeprefix(RESULT_PREFIX))
    return None


def report_run(system: str, run: int, drain: float, p50: float, p95: float, bulk: float | None) -> None:
    """One progress line per run, on stderr (stdout carries the JSON result)."""
    bulk_text = f"{bulk:,.0f} jobs/s" if bulk is not None else "none"
    print(
        f"{system} run {run + 1}: drain {drain:,.0f} jobs/s, wake-up p50 {p50:.2f} ms "
        f"p95 {p95:.2f} ms, bulk {bulk_text}",
        file=sys.stderr,
        flush=True,
    )


def report_start(system: str, run: int, start_up: float, cold: float, single: float) -> None:
    """The start-up figures of one run, on stderr."""
    print(
        f"{system} run {run + 1}: start-up {start_up:.2f} s, drain including start-up {cold:,.0f} jobs/s, "
        f"enqueue one by one {single:,.0f} jobs/s",
        file=sys.stderr,
        flush=True,
    )


def start_up(
    launch: Callable[[], Pool], enqueue_stamp: Callable[[str, float], None], samples: int = 3
) -> float:
    """Seconds from launching one worker until it started its first job, the median of
    ``samples``: a stamp job is enqueued (its ``t0`` the moment just before the launch),
    ``launch`` starts the worker without waiting for anything, and the job's stamp says
    when it began. The same for every system: process start, imports, connecting,
    registering, the first claim and handing the job to whatever runs it."""
    import statistics
    import tempfile

    figures = []
    for _ in range(samples):
        handle, path = tempfile.mkstemp(suffix=".stamps")
        os.close(handle)
        try:
            t0 = time.time()
            enqueue_stamp(path, t0)
            with launch():
                figures.append(read_stamps(path, 1)[0] / 1000)
        finally:
            os.unlink(path)
    return statistics.median(figures)


def time_cold_drain(launch: Callable[[], Pool], unfinished: Callable[[], int], count: int) -> float:
    """Jobs/s of ``count`` jobs already queued, from launching the workers (``launch``, which
    must not wait for them) until none is left: the drain a scale-out or a ``--burst`` run
    sees, start-up included."""
    start = time.perf_counter()
    with launch() as pool:
        time_drain(pool, unfinished)
        return count / (time.perf_counter() - start)


def time_drain(pool: Pool, unfinished: Callable[[], int], timeout: float = 600) -> float:
    """Seconds until ``unfinished()`` is 0, polled every 5 ms at first (as our own drain
    is) and then every 0.5 % of the time so far, up to 50 ms: the figure stays within about
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


def stamp(path: str, t0: float) -> None:
    """What a wake-up task does first: append "t0 now" (epoch seconds) to ``path``."""
    started = time.time()
    with open(path, "a") as handle:
        handle.write(f"{t0!r} {started!r}\n")


def read_stamps(path: str, expected: int, timeout: float = 60.0) -> list[float]:
    """Wake-up latencies in ms from a file of "t0 started" lines."""
    wait_until(
        lambda: Path(path).exists() and len(Path(path).read_text().splitlines()) >= expected,
        timeout,
        f"{expected} stamps in {path}",
    )
    lines = [line.split() for line in Path(path).read_text().splitlines()]
    return [(float(started) - float(t0)) * 1000 for t0, started in lines]
