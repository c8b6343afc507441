"""Our engine on the comparison's workload, through bench/throughput.py's own functions.

Run by bench/compare.py with the project venv's Python (``--runs``, ``--jobs``), against
DATABASE_URL (default ``jp_compare``, created if missing, migrated); it prints one
``RESULT {json}`` line. Per run, exactly what bench/throughput.py measures:

- drain: ``drain(jobs, 2)``: 2 ``manage.py runworker`` processes at their default settings
  (concurrency 2, child-process isolation on, LOG_LEVEL=WARNING), ``jobs`` ``test.noop`` jobs
  enqueued in bulk in one transaction, jobs/s from its commit until none is queued or running;
- wake-up: ``wake_up(200, 0.02)``: one idle worker, ``test.stamp`` jobs 20 ms apart, ms from
  the enqueue call to the job's start, p50 / p95;
- bulk enqueue: ``enqueue_bulk(jobs)``: ``jobs.enqueue_many`` of ``jobs`` no-ops in one
  transaction, jobs/s (the same batch size as the peers', not throughput.py's 100,000).

Any worker process still alive when it ends (a failed stop) is terminated, then killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from common import emit, ensure_database, harness_arguments, percentile, report_run

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_DATABASE = "jp_compare"
os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{DEFAULT_DATABASE}")
os.chdir(ROOT)


def kill_leftovers(grace: float = 20.0) -> None:
    """Terminate, then kill, any process this harness left behind."""
    from throughput import process_tree

    leftovers = process_tree(os.getpid())[1:]
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while leftovers and time.monotonic() < deadline:
        leftovers = [pid for pid in leftovers if Path(f"/proc/{pid}").exists() and not zombie(pid)]
        time.sleep(0.1)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def main() -> None:
    args = harness_arguments(__doc__)

    ensure_database(os.environ["DATABASE_URL"].rsplit("/", 1)[1].split("?")[0])
    sys.path.insert(0, str(ROOT / "bench"))
    import throughput

    try:
        throughput.prepare_database()
        drains, p50, p95, bulks = [], [], [], []
        for run in range(args.runs):
            drains.append(throughput.drain(args.jobs, 2))
            latencies = throughput.wake_up(args.samples, 0.02)
            p50.append(percentile(latencies, 0.5))
            p95.append(percentile(latencies, 0.95))
            bulks.append(throughput.enqueue_bulk(args.jobs))
            report_run("ours", run, drains[-1], p50[-1], p95[-1], bulks[-1])
        throughput.reset()
    finally:
        kill_leftovers()
    emit(
        system="ours",
        version=subprocess_output(["git", "describe", "--always", "--dirty"]),
        drain=drains,
        p50=p50,
        p95=p95,
        bulk=bulks,
        setup="2 runworker x concurrency 2 (defaults), child processes, LISTEN/NOTIFY",
    )


def subprocess_output(command: list[str]) -> str:
    import subprocess

    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


if __name__ == "__main__":
    main()
