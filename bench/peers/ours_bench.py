"""Our engine on the comparison's workload, through the same ``bench.lib.engine`` as
bench/throughput.py.

Run by bench/compare.py with the project venv's Python, from the project root
(``python -m bench.peers.ours_bench --runs 1 --jobs N``), against DATABASE_URL (default
``jp_compare``, created if missing, migrated); it prints one ``RESULT {json}`` line. Per
run, exactly what bench/throughput.py measures:

- drain (steady): ``drain(jobs, 2, shared=True)``: 2 plain ``manage.py runworker`` processes
  (every queue, two child processes each, the fair share on, isolation on,
  LOG_LEVEL=WARNING), ``jobs`` ``test.noop`` jobs enqueued in bulk in one transaction,
  jobs/s from its commit until none is queued or running;
- drain including start-up: ``cold_drain(jobs, 2)``: the jobs enqueued first, jobs/s from
  launching the 2 workers until none is left;
- start-up: ``start_up(3)``: seconds from launching one worker until it starts a job waiting
  for it, median of 3;
- wake-up: ``wake_up(200, 0.02)``: one idle worker, ``test.stamp`` jobs 20 ms apart, ms from
  the enqueue call to the job's start, p50 / p95;
- enqueue: ``enqueue_one_by_one(1000)`` (``jobs.enqueue``, each its own transaction), and
  ``enqueue_bulk(jobs)``: ``jobs.enqueue_many`` of ``jobs`` no-ops in one transaction,
  jobs/s (the same batch size as the peers', not throughput.py's 100,000).

Any worker process still alive when it ends (a failed stop) is terminated, then killed.
"""

from __future__ import annotations

import os
import subprocess

from bench.lib import project
from bench.lib.harness import emit, harness_arguments, report_run, report_start
from bench.lib.postgres import ensure_database
from bench.lib.processes import kill_leftovers
from bench.lib.stats import percentile

DEFAULT_DATABASE = "jp_compare"
SINGLE = 1000  # jobs enqueued one by one


def main(through_tasks: bool = False, doc: str | None = __doc__) -> None:
    """One harness run; ``through_tasks``: the same figures through django.tasks
    (bench/peers/ours_tasks_bench.py)."""
    args = harness_arguments(doc)
    os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{DEFAULT_DATABASE}")
    ensure_database(os.environ["DATABASE_URL"].rsplit("/", 1)[1].split("?")[0])
    project.setup(DEFAULT_DATABASE)
    from django.core.management import call_command

    from bench.lib import engine  # needs Django set up

    try:
        call_command("migrate", verbosity=0)
        system = "ours-tasks" if through_tasks else "ours"
        drains, p50, p95, bulks = [], [], [], []
        cold, startup, single = [], [], []
        for run in range(args.runs):
            drains.append(engine.drain(args.jobs, 2, through_tasks=through_tasks, shared=True))
            cold.append(engine.cold_drain(args.jobs, 2, through_tasks=through_tasks))
            startup.append(engine.start_up(3, through_tasks))
            latencies = engine.wake_up(args.samples, 0.02, through_tasks=through_tasks)
            p50.append(percentile(latencies, 0.5))
            p95.append(percentile(latencies, 0.95))
            single.append(
                engine.enqueue_tasks_one_by_one(SINGLE)
                if through_tasks
                else engine.enqueue_one_by_one(SINGLE)
            )
            # django.tasks has no bulk API: nothing to measure through it.
            bulks.append(None if through_tasks else engine.enqueue_bulk(args.jobs))
            report_run(system, run, drains[-1], p50[-1], p95[-1], bulks[-1])
            report_start(system, run, startup[-1], cold[-1], single[-1])
        engine.reset()
    finally:
        kill_leftovers()
    emit(
        system=system,
        version=git_version(),
        drain=drains,
        p50=p50,
        p95=p95,
        bulk=None if through_tasks else bulks,
        cold=cold,
        startup=startup,
        single=single,
        setup="2 plain runworker (every queue, 2 slots, the fair share on), child processes, LISTEN/NOTIFY"
        + (", @task enqueued one by one with Task.enqueue, results stored" if through_tasks else ""),
    )


def git_version() -> str:
    try:
        command = ["git", "describe", "--always", "--dirty"]
        return subprocess.run(command, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


if __name__ == "__main__":
    main()
