"""What observability costs a job, measured in one process so a shared machine's noise
mostly cancels out (the drain through real workers, ``bench.throughput --only drain``, is
the end-to-end figure):

    .venv/bin/python -m bench.observe_costs [--database URL] [--batches 200] [--tries 20000]

- the acknowledgement of a batch of 32 jobs (``store.complete``, on a session set up as a
  supervisor's: asynchronous commit on PostgreSQL) with the rollup as a supervisor keeps it
  (counted in memory, its upsert at most once a second) and without it
  (``jobs.rollup.record`` replaced by nothing), alternated batch by batch, and the upsert
  alone;
- a no-op try through the child's ``run`` with the try-log capture installed and without
  it, alternated in blocks of 1,000, and a try that logs one line;
- a workflow step's completion (``store.complete_in_transaction``: its fenced completion,
  the workflow's count, its result, the release of 1 or 100 successors) with tracing off,
  the release statement copying the workflow's ``traceparent`` (the driver's, reading the
  workflow's row) and copying a NULL constant instead (what it costs to carry the trace
  context when there is none), alternated, each in a transaction rolled back.

Uses the database in DATABASE_URL (default ``jp_observe_costs`` on the local PostgreSQL,
created if missing) or the one given; wipes its job and workflow tables. Prints medians.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time

from bench.lib import project

ACK_BATCH = 32


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--tries", type=int, default=20_000)
    parser.add_argument("--completions", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # as the benchmarks run workers: no console lines
    project.open_database(args.database, "jp_observe_costs")
    from django.core.management import call_command
    from django.db import connection

    from bench.lib import engine, fill
    from jobs import rollup, store, try_log
    from jobs.drivers import driver
    from jobs.worker import child

    call_command("migrate", verbosity=0)
    fill.wipe(["jobs_job", "jobs_attempt", "jobs_rollup"])
    driver().prepare_supervisor_session(connection)  # as a worker's supervisor acknowledges
    print(f"{engine.server_version()}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")

    record = rollup.record
    rollup.buffer()  # as in a worker's supervisor: counted in memory, written once a second
    timings: dict[bool, list[float]] = {True: [], False: []}
    flushes: list[float] = []
    for number in range(2 * args.batches):
        with_rollup = number % 2 == 0
        store.enqueue_many("test.noop", ({} for _ in range(ACK_BATCH)))
        claimed = store.claim("bench", ["default"], ACK_BATCH)
        done = [(job.id, job.attempt) for job in claimed]
        rollup.record = record if with_rollup else (lambda tries: None)  # type: ignore[assignment]
        started = time.perf_counter()
        store.complete("bench", done)
        timings[with_rollup].append((time.perf_counter() - started) * 1000)
        if with_rollup and rollup.pending():
            started = time.perf_counter()
            rollup.flush()  # at most once a second: timed on its own
            if not rollup.pending():
                flushes.append((time.perf_counter() - started) * 1000)
    rollup.record = record  # type: ignore[assignment]
    plain, rolled = statistics.median(timings[False]), statistics.median(timings[True])
    print(
        f"ack of {ACK_BATCH} jobs (median of {args.batches}): {plain:.2f} ms without the rollup, "
        f"{rolled:.2f} ms with it counted; its upsert ran {len(flushes)} times (once a second), "
        f"median {statistics.median(flushes or [0]):.2f} ms"
    )
    upserts = []
    tries_of_batch = [rollup.Finished("default", "test.noop", rollup.SUCCEEDED, 0.002, 0.0003)] * ACK_BATCH
    for _ in range(50):
        started = time.perf_counter()
        rollup._write(rollup.rows(tries_of_batch))
        upserts.append((time.perf_counter() - started) * 1000)
    print(f"the rollup's upsert alone (one batch's rows): {statistics.median(upserts):.2f} ms median")

    def tries(count: int, logs: bool) -> float:
        name = "bench.observe.log_one" if logs else "test.noop"
        started = time.perf_counter()
        for number in range(count):
            child.run(number, name, "{}", 1, 1, "bench", lambda percent, message: None)
        return (time.perf_counter() - started) / count * 1e6

    from jobs import job

    @job("bench.observe.log_one")
    def log_one(ctx: object) -> None:
        logging.getLogger("bench.observe").info("one line")

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    capture = try_log.install("INFO", 1000, 64 * 1024)
    block = 1000
    without: list[float] = []
    with_capture: list[float] = []
    for _ in range(max(1, args.tries // block)):
        child._capture = None
        without.append(tries(block, logs=False))
        child._capture = capture
        with_capture.append(tries(block, logs=False))
    logging_one = tries(block, logs=True)
    child._capture = None
    root.removeHandler(capture)
    root.handlers, root.level = handlers, level
    print(
        f"a no-op try in the child's run: {statistics.median(without):.2f} µs without the capture, "
        f"{statistics.median(with_capture):.2f} µs with it; a try logging one line: {logging_one:.2f} µs"
    )
    step_completions(args.completions)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


class _RolledBack(Exception):
    pass


def step_completions(runs: int) -> None:
    """A step's completion releasing its successors, the release copying the workflow's
    ``traceparent`` and a NULL constant, alternated (see the module's docstring)."""
    import importlib

    from django.db import connection, transaction

    import jobs
    from bench.lib import fill
    from jobs import store

    module = importlib.import_module(
        f"jobs.drivers.{'mariadb' if connection.vendor == 'mysql' else 'postgres'}"
    )
    copying = module.RELEASE_SUCCESSORS
    statements = {"copied": copying, "NULL": copying.replace(module.SUCCESSORS_TRACEPARENT, "NULL")}
    assert statements["NULL"] != copying
    for width in (1, 100):
        fill.wipe(
            ["jobs_workflow_edge", "jobs_workflow_step", "jobs_workflow", "jobs_job", "testjobs_execution"]
        )
        workflow = jobs.start(
            jobs.chain(
                jobs.step("test.step", {"value": -1}, name="head"),
                jobs.group([jobs.step("test.step", {"value": n}, name=f"s{n}") for n in range(width)]),
            )
        )
        head = jobs.workflow_steps(workflow)[0]
        assert head.job_id is not None
        claimed = store.claim_job("bench", head.job_id)
        assert claimed is not None
        fill.analyze(["jobs_workflow_step", "jobs_workflow_edge", "jobs_job", "jobs_workflow"])
        timings: dict[str, list[float]] = {name: [] for name in statements}
        for number in range(2 * runs):
            name = list(statements)[number % 2]
            module.RELEASE_SUCCESSORS = statements[name]
            try:
                with transaction.atomic():
                    started = time.perf_counter()
                    store.complete_in_transaction(
                        "bench", claimed.id, claimed.attempt, step=head.id, result=None
                    )
                    timings[name].append((time.perf_counter() - started) * 1000)
                    raise _RolledBack  # the same state for the next run
            except _RolledBack:
                pass
        module.RELEASE_SUCCESSORS = copying
        copied, null = (statistics.median(timings[name]) for name in ("copied", "NULL"))
        print(
            f"a step's completion releasing {width}, tracing off (median of {runs}): {copied:.2f} ms "
            f"copying the workflow's traceparent, {null:.2f} ms copying a NULL ({copied / null:.3f})"
        )


if __name__ == "__main__":
    main()
