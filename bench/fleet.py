"""The worker fleet, simulated on this machine: real ``runworker`` tasks behind a PgBouncer
of its own, scaled by a local controller that applies AWS's target tracking to the figure
``sweep`` publishes, through a bursty load. From the project root:

    .venv/bin/python -m bench.fleet              # about 5 minutes; plot and table in var/bench/fleet/

- The metric is ``jobs.metrics.measure()``'s backlog per task (due jobs ÷ live workers),
  read once per evaluation, as ``sweep`` (or the one-minute publisher of
  docs/operations.md) sends it to CloudWatch.
- The controller is ``bench.lib.autoscaling.TargetTracking`` with the stack's settings
  (target 40, scale-out cooldown 60 s, scale-in cooldown 300 s, 1 to --max-tasks tasks),
  evaluated once a minute, with AWS's alarm data points (3 above the target to scale out,
  15 below 90 % of it to scale in).
- Time is compressed by --compress (default 60: one second here is one minute there) for
  the controller's clock, its evaluations and cooldowns, and for the worker's
  --shutdown-timeout (110 s: 1.8 s, so a 3 s job that started just before is cut off and
  put back). Job lengths, a
  task's start-up (seconds here on 2 busy cores: minutes on the compressed clock; Fargate
  takes about one) and the 10 s ECS leaves between the worker's grace and its SIGKILL are
  real.
- A task is a ``runworker`` at the default concurrency (2) whose queries go through
  PgBouncer in transaction mode, LISTEN direct. Scale-in sends SIGTERM to tasks picked at
  random, busy or not, and SIGKILL at the stop timeout.
- The load (``bench.lib.load``): idle, a burst of --burst jobs enqueued over 5 s, a
  trickle of --trickle-rate jobs/s until --trickle s after the burst has drained, idle.
  Jobs are 60 % no-ops, 25 % 20 ms, 14.5 % 200 ms and 0.5 % 3 s. The burst is scaled to this 2-core machine: its CPU, not the
  tasks, bounds the fleet at 100–150 jobs/s, so 20,000 jobs take two to three minutes and a
  bigger burst only makes the run longer; the trickle outlasts the burst (by a time, since
  how long the burst takes depends on the machine's load) so that scale-in stops tasks
  while they run trickle jobs.

It writes ``fleet.png`` (tasks, backlog, oldest due job's age over time), ``fleet.md``
(the table) and ``samples.csv``. Uses the database in DATABASE_URL (default ``jp_fleet``,
created if missing) and wipes its job tables.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.lib import project
from bench.lib.postgres import ensure_database


@dataclass
class Sample:
    at: float  # seconds since the start
    desired: int  # the service's desired count
    live: int  # workers registered and renewing their row
    due: int
    oldest_age: float  # seconds
    running: int
    metric: float  # backlog per task


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--compress", type=float, default=60.0, help="seconds there per second here")
    parser.add_argument("--burst", type=int, default=20_000)
    parser.add_argument("--trickle-rate", type=float, default=25.0, help="jobs/s after the burst")
    parser.add_argument(
        "--trickle", type=float, default=60.0, help="seconds of trickle after the burst drained"
    )
    parser.add_argument("--idle", type=float, default=10.0, help="idle seconds before and after")
    parser.add_argument("--max-tasks", type=int, default=12)
    parser.add_argument("--target", type=float, default=40.0, help="backlog per task")
    parser.add_argument("--out", type=Path, default=project.ROOT / "var" / "bench" / "fleet")
    args = parser.parse_args()

    if "DATABASE_URL" not in os.environ:
        ensure_database("jp_fleet")
    project.setup("jp_fleet")
    from django.core.management import call_command

    from bench.lib import engine
    from bench.lib.autoscaling import TargetTracking
    from bench.lib.load import BurstyLoad
    from bench.lib.service import Service
    from jobs.metrics import measure
    from tests.jobs_app.models import Execution
    from tests.support.pgbouncer import PgBouncer

    call_command("migrate", verbosity=0)
    engine.reset()
    Execution.objects.all().delete()
    args.out.mkdir(parents=True, exist_ok=True)
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)
    for old in logs.glob("*.log"):
        old.unlink()

    k = args.compress
    controller = TargetTracking(
        target=args.target,
        min_tasks=1,
        max_tasks=args.max_tasks,
        scale_out_cooldown=60 / k,
        scale_in_cooldown=300 / k,
    )
    load = BurstyLoad(
        idle=args.idle,
        burst=args.burst,
        burst_spread=5.0,
        trickle_rate=args.trickle_rate,
        trickle=args.trickle,
        tail=args.idle,
    )
    samples: list[Sample] = []
    with PgBouncer(pool_size=10) as bouncer:
        # The worker's grace is compressed; the 10 s margin before ECS's SIGKILL is not: it
        # is the time a real process needs to put its jobs back, on this busy machine too.
        service = Service(bouncer, logs, shutdown_timeout=110 / k, stop_timeout=110 / k + 10)
        try:
            service.scale_to(1)
            engine_wait_live(1)
            start = time.monotonic()
            next_evaluation = 0.0
            while True:
                now = time.monotonic() - start
                load.step(now)
                if load.drained_at is None and now > load.burst_end and _burst_drained(load):
                    load.drained(now)
                figures = measure()
                samples.append(
                    Sample(
                        now,
                        service.desired,
                        figures.live_workers,
                        figures.total,
                        figures.oldest_due_age(),
                        figures.total_running,
                        figures.per_task,
                    )
                )
                if now >= next_evaluation:
                    service.scale_to(controller.evaluate(service.desired, figures.per_task, now))
                    next_evaluation += 60 / k
                service.tend()
                if now >= load.end and _settled(service, figures) or now > load.end + 600 or now > 1800:
                    break
                time.sleep(0.25)
        finally:
            service.shutdown()

    table = results(load, service, samples, k)
    (args.out / "fleet.md").write_text(table)
    write_samples(args.out / "samples.csv", samples)
    plot(args.out / "fleet.png", samples, load, k)
    print(table)
    print(f"plot: {args.out / 'fleet.png'}")


def engine_wait_live(count: int) -> None:
    from bench.lib.waiting import wait_until
    from jobs.metrics import measure

    wait_until(lambda: measure().live_workers >= count, 60, f"{count} tasks to register", interval=0.1)


def _burst_drained(load) -> bool:
    from jobs.models import ACTIVE, Job

    assert load.burst_ids is not None
    return not Job.objects.filter(pk__range=load.burst_ids, status__in=ACTIVE).exists()


def _settled(service, figures) -> bool:
    """Nothing left to run, and the fleet back at its minimum."""
    return figures.total == 0 and figures.total_running == 0 and service.desired == 1 and not service.stopping


def results(load, service, samples: list[Sample], k: float) -> str:
    from django.db.models import Max

    from jobs.models import ACTIVE, Job, JobAttempt, Status
    from jobs.store import REQUEUED_AT_SHUTDOWN
    from tests.jobs_app.models import Execution

    assert load.burst_ids is not None
    first, last = load.burst_ids
    burst_done = Job.objects.filter(pk__range=(first, last)).aggregate(Max("finished_at"))["finished_at__max"]
    burst_start = Job.objects.get(pk=first).created_at
    drained = (burst_done - burst_start).total_seconds()
    runs = Counter(Execution.objects.values_list("job_id", flat=True))
    succeeded = Job.objects.filter(status=Status.SUCCEEDED).count()
    stopped = service.scale_ins()
    rows = [
        ("jobs enqueued", f"{load.sent:,} (burst {load.burst:,}, trickle {load.sent - load.burst:,})"),
        ("run", f"{samples[-1].at:.0f} s here"),
        ("time to drain the burst", f"{drained:.1f} s here (first enqueued → last finished)"),
        ("peak tasks", f"{max(s.desired for s in samples)} desired, {max(s.live for s in samples)} live"),
        (
            "peak backlog",
            f"{max(s.due for s in samples):,} due jobs; oldest waited {max(s.oldest_age for s in samples):.1f} s",
        ),
        (
            "jobs lost",
            f"{load.sent - succeeded - Job.objects.filter(status__in=ACTIVE).count()} (not succeeded: {load.sent - succeeded})",
        ),
        ("jobs run twice (to their end)", str(sum(1 for count in runs.values() if count > 1))),
        ("jobs that used an extra attempt", str(Job.objects.filter(attempts__gt=1).count())),
        ("failed tries recorded", str(JobAttempt.objects.count())),
        ("tasks stopped by scale-in", str(len(stopped))),
        ("jobs those tasks held at SIGTERM", str(sum(task.held_at_stop for task in stopped))),
        (
            "jobs cut off at the stop timeout and requeued",
            str(Job.objects.filter(message=REQUEUED_AT_SHUTDOWN).count()),
        ),
        (
            "tasks killed at the stop timeout",
            str(sum(1 for task in stopped if task.process.returncode == -9)),
        ),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"Fleet simulation, time compressed {k:g}× for the controller (1 s here = {k:g} s on AWS)", ""]
    lines += [f"| {'figure'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
    lines += [f"| {name.ljust(width)} | {value} |" for name, value in rows]
    return "\n".join(lines) + "\n"


def write_samples(path: Path, samples: list[Sample]) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["seconds", "desired", "live", "due", "oldest_age", "running", "backlog_per_task"])
        for s in samples:
            writer.writerow(
                [f"{s.at:.2f}", s.desired, s.live, s.due, f"{s.oldest_age:.2f}", s.running, f"{s.metric:.1f}"]
            )


def plot(path: Path, samples: list[Sample], load, k: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at = [s.at for s in samples]
    figure, (tasks, backlog, age) = plt.subplots(3, 1, sharex=True, figsize=(10, 8))
    tasks.step(at, [s.desired for s in samples], where="post", label="desired")
    tasks.plot(at, [s.live for s in samples], label="live (registered)")
    tasks.set_ylabel("tasks")
    tasks.legend(loc="upper right")
    backlog.plot(at, [s.due for s in samples], color="tab:red")
    backlog.set_ylabel("due jobs")
    age.plot(at, [s.oldest_age for s in samples], color="tab:purple")
    age.set_ylabel("oldest due job (s)")
    age.set_xlabel(f"seconds here (× {k:g} on the controller's clock: cooldowns, evaluations, stop timeout)")
    for axis in (tasks, backlog, age):
        axis.axvspan(load.idle, load.burst_end, color="tab:orange", alpha=0.15)
        axis.axvspan(load.burst_end, min(load.trickle_end, at[-1]), color="tab:green", alpha=0.08)
        axis.grid(alpha=0.3)
    tasks.set_title("Fleet on backlog per task: burst (orange), trickle (green), idle")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
