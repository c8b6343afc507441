"""Our engine against Procrastinate, django-tasks-db and the bare-psycopg floor, in one sitting;
and our engine through django.tasks next to django-tasks-db through django.tasks.

    .venv/bin/python -m bench.compare                      # everything: 5,000 jobs, 3 runs
    .venv/bin/python -m bench.compare --only ours --only procrastinate --jobs 1000 --runs 1

The same workload for every system, each run on its own database:

- drain: 5,000 no-op jobs enqueued in one transaction while 2 worker processes wait (ours:
  2 ``runworker --queue default:2``, two slots each for the queue; Procrastinate: 2 workers x
  concurrency 4; django-tasks-db: 2 ``db_worker``), jobs/s from the commit until every job is
  done;
- idle wake-up: one idle worker, 200 jobs enqueued one by one 20 ms apart, ms from the
  enqueue call to the job's start, p50 and p95;
- bulk enqueue: the library's bulk API on 5,000 jobs, jobs/s ("none" if it has none).

"ours" uses the engine's own API (``enqueue_many``, ``@job`` types); "ours-tasks" is the same
engine as a ``django.tasks`` backend, on the very ``@task`` module django-tasks-db runs
(bench/peers/task_functions.py, enqueued with ``Task.enqueue`` one by one in one
transaction): "ours-tasks / django-tasks-db" is the like-for-like ratio. django-tasks-db
0.13 on Django 6.1 runs on the built-in ``django.tasks`` (not its own ``django_tasks``
package), so both sides use the same API.

Every figure is the median of --runs runs (min–max). The runs go round-robin (round 1 runs
every system once, then round 2, ...) so that a burst of load on the shared machine hits all
systems alike. The floor is ``../shared/bench/limit_probe.py`` (``throughput JOBS 2 32`` and
``latency`` once per round); its throughput is timed from the start of its own processes, so
on 5,000 jobs that start-up weighs more than on its default 20,000 (``--floor-jobs``).
Ratios are what to quote: the machine is shared and noisy.

Procrastinate and django-tasks-db are installed from bench/requirements-peers.txt into
bench/.peers-venv (created with the project venv's base Python, refreshed when that file
changes); their harnesses (bench/peers/, on bench.lib's psycopg-only modules) run there, ours
(bench/peers/ours_bench.py, on the same ``bench.lib.engine`` as bench/throughput.py) in the
project venv, with DATABASE_URL set to COMPARE_DATABASE_URL (default
``postgres://postgres@127.0.0.1:5432/jp_compare``). Each harness runs as a module from the
project root, in its own process group under a deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench.lib.comparison import OURS, SYSTEMS, log, peers_venv, run_rounds, table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=5000, help="jobs per drain and per bulk enqueue")
    parser.add_argument(
        "--floor-jobs",
        type=int,
        help="jobs per limit_probe throughput run (default --jobs; its time includes starting its processes)",
    )
    parser.add_argument("--only", action="append", choices=SYSTEMS, help="run only this part (repeatable)")
    parser.add_argument("--samples", type=int, default=200, help="wake-up samples per run (peers and ours)")
    parser.add_argument(
        "--timeout", type=float, help="deadline per harness run in seconds (default: from --jobs)"
    )
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    if args.timeout is None:
        args.timeout = max(300, args.jobs / 10)
    wanted = [system for system in SYSTEMS if system in (args.only or SYSTEMS)]

    if any(system not in OURS for system in wanted):
        peers_venv()
    started = datetime.now(UTC)
    log(f"load average at start: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    results, failures = run_rounds(wanted, args)
    finished = datetime.now(UTC)
    log(f"load average at end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    print()
    print(table(results, args, started, finished))
    if args.json:
        args.json.write_text(
            json.dumps({"started": started.isoformat(), "results": results}, indent=2) + "\n"
        )
    if failures:
        print("\nfailed:\n  " + "\n  ".join(f"{system}: {error}" for system, error in failures.items()))
        sys.exit(1)


if __name__ == "__main__":
    main()
