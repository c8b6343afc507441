"""Throughput, latency and staying power of the job engine, on PostgreSQL, with real
``manage.py runworker`` processes (child-process isolation on). From the project root:

    .venv/bin/python -m bench.throughput                 # the headline figures
    .venv/bin/python -m bench.throughput --only drain --jobs 20000
    .venv/bin/python -m bench.throughput --only recovery # back to work after a database outage
    .venv/bin/python -m bench.throughput --only atomic   # atomic jobs beside plain ones
    .venv/bin/python -m bench.throughput --only kill     # writes applied twice under kill -9
    .venv/bin/python -m bench.throughput --only limits   # drains under flow limits (rate, concurrency)
    .venv/bin/python -m bench.throughput --scale         # + drain with 1M finished, 100k queued
    .venv/bin/python -m bench.throughput --only due-later # drain beside 1M jobs due later, alternated
    .venv/bin/python -m bench.throughput --memory        # + 100,000 jobs through one worker

Every figure is the median of --runs runs (default 3) with min–max. Workers run with
LOG_LEVEL=WARNING, the README's recommendation for throughput (one log line per job start
and end costs more than a no-op job). Uses the database in DATABASE_URL (default
``jp_bench``, created if missing), or the one given with --database (MariaDB too:
``--database mysql://root@127.0.0.1:3306/jp_bench``), and wipes its job tables. The measurements are in
``bench.lib.engine``; each says there what it measures and how.
"""

from __future__ import annotations

import argparse
import os
import statistics

from bench.lib import project
from bench.lib.stats import paired_ratio, percentile, summary

PARTS = [
    "enqueue", "bulk", "drain", "share", "startup", "atomic", "kill", "latency", "idle", "fairness", "recovery",
    "plan", "due-later", "limits",
]  # fmt: skip
DEFAULT_PARTS = [
    "enqueue",
    "bulk",
    "drain",
    "atomic",
    "kill",
    "latency",
    "idle",
    "fairness",
    "recovery",
    "limits",
]
# On MariaDB (--database mysql://…): the drain, wake-up and enqueue figures, the claim's plan,
# and the drains under flow limits.
MARIADB_PARTS = ["enqueue", "bulk", "drain", "latency", "plan", "limits"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per drain run")
    parser.add_argument(
        "--atomic-jobs", type=int, default=5_000, help="jobs per drain run of the plain/atomic pairs"
    )
    parser.add_argument("--workers", type=int, default=2, help="runworker processes (one per core)")
    parser.add_argument(
        "--limit-jobs",
        type=int,
        default=5_000,
        help="jobs per drain of the limits case's pair (limits / none)",
    )
    parser.add_argument(
        "--rated-jobs",
        type=int,
        default=5_000,
        help="jobs per drain of the limits case under a rate of 1,000/s",
    )
    parser.add_argument("--only", action="append", choices=PARTS)
    parser.add_argument("--scale", action="store_true", help="also drain with 1M finished + 100k queued rows")
    parser.add_argument("--memory", action="store_true", help="also run 100,000 jobs through one worker")
    parser.add_argument(
        "--database",
        help="the database URL to measure (postgres://… or mysql://… for MariaDB); its job tables are wiped",
    )
    args = parser.parse_args()
    mariadb = project.open_database(args.database, "jp_bench")
    wanted = set(args.only or (MARIADB_PARTS if mariadb else DEFAULT_PARTS))
    from django.core.management import call_command

    from bench.lib import engine, fill  # both need Django set up

    call_command("migrate", verbosity=0)
    print(f"{engine.server_version()}; {os.cpu_count()} cores; {args.workers} workers")

    if "enqueue" in wanted:
        if not mariadb:
            floor = [engine.commit_floor(2000) for _ in range(args.runs)]
            print(
                "bare INSERT+COMMIT:   "
                + summary(floor, "jobs/s")
                + "  (psycopg, 1 producer: the flush floor)"
            )
        for producers, atomic in ((1, False), (1, True), (4, False)):
            rates = [engine.enqueue_one_by_one(2000 * producers, producers, atomic) for _ in range(args.runs)]
            how = "in atomic()" if atomic else "autocommit"
            print(f"enqueue one by one:   {summary(rates, 'jobs/s')}  ({producers} producer(s), {how})")
    if "bulk" in wanted:
        rates = [engine.enqueue_bulk(100_000) for _ in range(args.runs)]
        print("enqueue bulk:         " + summary(rates, "jobs/s"))
    if "drain" in wanted:
        rates = [engine.drain(args.jobs, args.workers) for _ in range(args.runs)]
        print(f"drain {args.jobs:,} no-ops:  " + summary(rates, "jobs/s") + "  (--queue default:2)")
        shared = [engine.drain(args.jobs, args.workers, shared=True) for _ in range(args.runs)]
        print(
            "  plain runworker:    "
            + summary(shared, "jobs/s")
            + "  (every queue, fair share; short jobs borrow the reserved slot)"
        )
        print(f"  plain / named lane: {statistics.median(shared) / statistics.median(rates):.2f}")
    if "share" in wanted:
        # Jobs that take real time: the reserved slot is structural there (one at a time
        # instead of two) unless they borrow it. One worker, two slots, alternated.
        named, plain = [], []
        for _ in range(args.runs):
            named.append(engine.drain(100, 1, type_name="test.pause", payload={"seconds": 0.1}))
            plain.append(engine.drain(100, 1, type_name="test.pause", payload={"seconds": 0.1}, shared=True))
        print("drain 100 x 100 ms, 1 worker, --queue default:2: " + summary(named, "jobs/s"))
        print("  plain runworker:                            " + summary(plain, "jobs/s"))
        print(f"  plain / named lane: {statistics.median(plain) / statistics.median(named):.2f}")
    if "startup" in wanted:
        first = [engine.start_up(3) for _ in range(args.runs)]
        burst = [engine.burst_exit(3) for _ in range(args.runs)]
        print(
            "start-up, launch to first job: "
            + summary(first, "s", 3)
            + "  (plain runworker, median of 3 each)"
        )
        print(
            "runworker --burst, one job:    "
            + summary([run[0] for run in burst], "s", 3)
            + "  (launch to exit)"
        )
        print(
            "  its CPU:                     "
            + summary([run[1] for run in burst], "s", 3)
            + "  (the worker's processes)"
        )
        print(
            "  launch to its first claim:   "
            + summary([run[2] for run in burst], "s", 3)
            + "  (the job's started_at)"
        )
        memory = engine.process_memory()
        print(
            "private memory after 1,000 no-ops: "
            + ", ".join(
                f"{role} {' / '.join(f'{kib / 1024:.1f}' for kib in sizes)} MiB"
                for role, sizes in memory.items()
            )
        )
    if "atomic" in wanted:
        # Each pair in one sitting: the ratio is the figure, the machine is shared.
        pairs = [
            ("no-ops", engine.NOOP, engine.NOOP_ATOMIC),
            ("one-row writes", engine.WRITE, engine.WRITE_ATOMIC),
        ]
        count = args.atomic_jobs
        for label, plain_type, atomic_type in pairs:
            plain = [engine.drain(count, args.workers, type_name=plain_type) for _ in range(args.runs)]
            atomic = [engine.drain(count, args.workers, type_name=atomic_type) for _ in range(args.runs)]
            print(f"drain {count:,} {label}, plain:  " + summary(plain, "jobs/s"))
            print(f"drain {count:,} {label}, atomic: " + summary(atomic, "jobs/s"))
            print(f"  atomic / plain: {statistics.median(atomic) / statistics.median(plain):.2f}")
    if "kill" in wanted:
        runs = [engine.kill_run(1500, 3, 9) for _ in range(args.runs)]
        print("kill -9 nine times, 1,500 plain + 1,500 atomic one-row jobs, 3 workers:")
        print("  plain jobs written twice:  " + summary([plain for plain, _, _ in runs], "jobs"))
        print("  atomic jobs written twice: " + summary([atomic for _, atomic, _ in runs], "jobs"))
        print("  atomic jobs a kill cut off (run again): " + summary([cut for _, _, cut in runs], "jobs"))
    if "latency" in wanted:
        # PostgreSQL's idle workers wake on NOTIFY; MariaDB's poll, so there the figure is
        # the poll interval's: the default (JOBS_POLL_INTERVAL, 1 s) and a tenth of it.
        for poll in (1.0, 0.1) if mariadb else (None,):
            how = f"  (polling every {poll:g} s)" if poll else ""
            runs = [engine.wake_up(200 if poll != 1.0 else 40, 0.02 if not poll else 0.15, poll_interval=poll)
                    for _ in range(args.runs)]  # fmt: skip
            print("idle wake-up p50:     " + summary([percentile(run, 0.5) for run in runs], "ms", 2) + how)
            print("idle wake-up p95:     " + summary([percentile(run, 0.95) for run in runs], "ms", 2) + how)
    if "idle" in wanted:
        print("idle worker CPU:      " + summary([engine.idle_cpu(10.0)], "% of a core", 2))
    if "fairness" in wanted:
        runs = [engine.fairness(10_000) for _ in range(args.runs)]
        print("ai start, 10k waiting in default: p50 " + summary([percentile(r, 0.5) for r in runs], "ms", 1))
        print("                                  max " + summary([max(r) for r in runs], "ms", 1))
    if "recovery" in wanted:
        seconds = [engine.recovery(3000, args.workers) for _ in range(args.runs)]
        print("back to work after a 1 s database outage: " + summary(seconds, "s", 2))
    if "limits" in wanted:
        # Flow control (docs/flow-control.md). Each pair in one sitting, alternated, so both
        # see the same machine: the ratio is the figure.
        count = args.limit_jobs
        plain, declared = [], []
        for _ in range(args.runs):
            plain.append(engine.drain(count, args.workers))
            declared.append(engine.drain(count, args.workers, type_name=engine.NOOP_LIMITED))
        print(f"drain {count:,} no-ops, no limits:       " + summary(plain, "jobs/s"))
        print(f"drain {count:,} no-ops, limits not reached: " + summary(declared, "jobs/s"))
        print(
            f"  declared / none: {statistics.median(declared) / statistics.median(plain):.2f}"
            f"  (load average {os.getloadavg()[0]:.2f})"
        )
        rated = [engine.rated_drain(args.rated_jobs, args.workers) for _ in range(args.runs)]
        print(
            f"drain {args.rated_jobs:,} no-ops at 1,000/s: held "
            + summary([rate for rate, _ in rated], "starts/s")
            + f"; most in any second {max(most for _, most in rated):,}"
        )
        held = [engine.limited_drain(400, args.workers, 8, 0.1) for _ in range(args.runs)]
        print(
            "drain 400 jobs of 100 ms, concurrency 8, 2×8 slots: mean running "
            + summary([mean for mean, _, _ in held], "", 2)
            + "; at the limit "
            + summary([share * 100 for _, share, _ in held], "% of samples", 1)
            + f"; most {max(most for _, _, most in held)}"
        )
    if "plan" in wanted or args.scale:
        engine.reset()
        fill.history(1_000_000, 100_000)
        print("claim plan with 1M finished + 100k queued (not due):\n" + engine.claim_plan())
    if args.scale:
        empty = [engine.drain(args.jobs, args.workers) for _ in range(args.runs)]
        # The 100,000 waiting jobs are due tomorrow, so only the measured ones are claimable
        # and every claim has to find them past the others.
        big = [engine.drain(args.jobs, args.workers, backlog=(1_000_000, 100_000)) for _ in range(args.runs)]
        print("drain, empty table:   " + summary(empty, "jobs/s"))
        print("drain, 1M + 100k:     " + summary(big, "jobs/s"))
        print(f"ratio: {statistics.median(big) / statistics.median(empty):.2f}")
    if "due-later" in wanted:
        # 1,000,000 jobs due tomorrow at priority high, ahead of the drained (normal) jobs in
        # claim order: every claim that reads queued jobs in that order meets them first.
        # Runs alternate with the empty table, so both see the same machine.
        engine.reset()
        fill.history(0, 1_000_000, queued_priority=-50)
        print("claim plan with 1M jobs due later (high priority):\n" + engine.claim_plan())
        empty, waiting = [], []
        for _ in range(args.runs):
            empty.append(engine.drain(args.jobs, args.workers))
            waiting.append(
                engine.drain(args.jobs, args.workers, backlog=(0, 1_000_000), waiting_priority=-50)
            )
        print("drain, empty table:        " + summary(empty, "jobs/s"))
        print("drain, 1M due later:       " + summary(waiting, "jobs/s"))
        print(
            f"ratio: {paired_ratio(waiting, empty):.2f} (median of the {args.runs} pairs' ratios; "
            f"ratio of the medians {statistics.median(waiting) / statistics.median(empty):.2f})"
        )
    if args.memory:
        early, late = engine.memory(100_000)
        print(
            f"worker RSS after 1,000 jobs: {early:,} KiB; after 100,000: {late:,} KiB ({late / early - 1:+.1%})"
        )


if __name__ == "__main__":
    main()
