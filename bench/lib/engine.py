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
from bench.lib.fill import analyze, flags_jobs_due_later, history, wipe
from bench.lib.processes import Pool, cpu_seconds, private_kib, process_children, rss_kib
from bench.lib.project import ROOT
from bench.lib.waiting import wait_until
from tests.support.tcp_proxy import TcpProxy

NOOP = "test.noop"
NOOP_ATOMIC = "test.noop_atomic"  # the same, in a transaction with its completion
WRITE = "test.write"  # inserts one row (committed on its own, then acknowledged)
WRITE_ATOMIC = "test.write_atomic"  # inserts one row in a transaction with its completion


TABLES = ("jobs_job", "jobs_attempt", "jobs_worker", "testjobs_execution", "jobs_flow_gate")


def on_mariadb() -> bool:
    return connection.vendor == "mysql"


def reset() -> None:
    wipe(TABLES)
    analyze(["jobs_job"])


def server_version() -> str:
    if on_mariadb():
        return f"MariaDB {scalar('SELECT VERSION()')}"
    return f"PostgreSQL {scalar('SHOW server_version')}"


def scalar(query: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0]


def listeners() -> int:
    """Sessions of this database in LISTEN: one per running worker. MariaDB's workers poll:
    there, the workers registered and not stopped."""
    if on_mariadb():
        return scalar("SELECT count(*) FROM jobs_worker WHERE stopped_at IS NULL")
    return scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
    )


def worker_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """LOG_LEVEL=WARNING (the README's advice for throughput), without the timers (whose
    runs are jobs too: a sweep would land in a drain's count), and the project's bytecode
    written as a deployed image has it compiled (a PYTHONDONTWRITEBYTECODE in the caller's
    environment would have every worker compile the project again at its start)."""
    environment = {**os.environ, "LOG_LEVEL": "WARNING", "JOBS_SCHEDULER": "false", **(env or {})}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


def launch(count: int, *args: str, env: dict[str, str] | None = None) -> Pool:
    """``count`` runworker processes, started and not waited for."""
    command = [sys.executable, "manage.py", "runworker", *args]
    return Pool([command] * count, ROOT, worker_environment(env))


class Workers(Pool):
    """``count`` runworker processes (``worker_environment``); ready once each one LISTENs."""

    def __init__(self, count: int, *args: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "manage.py", "runworker", *args]
        super().__init__([command] * count, ROOT, worker_environment(env))
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
                " progress_message, error, message) VALUES ('test.noop', 'default', 0, 'queued', '{}',"
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
#: serves every queue with a fair share, whose reserved slot short jobs borrow while no
#: other queue has work: ``shared=True`` measures that.
DRAIN_LANE = ("--queue", "default:2")


def enqueue_tasks(count: int) -> str:
    """``count`` no-op tasks through django.tasks (``Task.enqueue``, one at a time: the API
    has no bulk call), as bench/peers/django_tasks_db_bench.py enqueues them; their rows'
    job type."""
    from bench.peers.task_functions import noop

    first = noop.enqueue()
    for _ in range(count - 1):
        noop.enqueue()
    return scalar("SELECT type FROM jobs_job WHERE id = %s", [int(first.id)])


def succeeded(first: int, last: int, type_name: str) -> int:
    """Jobs of ``type_name`` among ids ``first``..``last`` that succeeded: a plain runworker
    also runs the timers' jobs it books, whose ids may fall in the range."""
    return scalar(
        "SELECT count(*) FROM jobs_job WHERE status = 'succeeded' AND id BETWEEN %s AND %s AND type = %s",
        [first, last, type_name],
    )


def drain(
    count: int,
    workers: int,
    backlog: tuple[int, int] = (0, 0),
    type_name: str = NOOP,
    through_tasks: bool = False,
    *,
    shared: bool = False,
    payload: dict | None = None,
    waiting_priority: int = 0,
) -> float:
    """Jobs/s from the commit of ``count`` queued jobs of ``type_name`` until none of them is
    left.

    ``backlog`` = (finished, waiting) rows put in the table first (see ``fill.history``),
    the waiting ones of ``waiting_priority``.
    With an atomic type each job is its own transaction, committed (and flushed) with its
    completion, where plain jobs' successes are acknowledged many to a statement.
    ``through_tasks``: no-op django.tasks tasks on our backend instead of jobs of
    ``type_name`` (enqueued one by one in the transaction, the only way django.tasks has).
    ``shared``: plain ``runworker`` processes (every queue, fair share) instead of
    ``DRAIN_LANE``. ``payload``: each job's (default none).
    """
    reset()
    if any(backlog):
        history(*backlog, queued_priority=waiting_priority)
    pool = Workers(workers) if shared else Workers(workers, *DRAIN_LANE)
    try:
        first = scalar("SELECT COALESCE(max(id), 0) + 1 FROM jobs_job")
        with transaction.atomic():
            if through_tasks:
                type_name = enqueue_tasks(count)
            else:
                jobs.enqueue_many(type_name, (dict(payload or {}) for _ in range(count)))
            last = scalar("SELECT max(id) FROM jobs_job")
            statistics_of_the_load()
            start = time.perf_counter()
        wait_until(lambda: drained(first, last), 600, "the queue to drain", interval=0.005)
        elapsed = time.perf_counter() - start
    finally:
        pool.stop()
    done = succeeded(first, last, type_name)
    if done != count:
        raise SystemExit(f"Drain lost jobs: {done} of {count} succeeded.")
    return count / elapsed


def statistics_of_the_load() -> None:
    """PostgreSQL's statistics of the table as it is now, queued jobs and all, as autovacuum's
    analyze would take them of a table that has held such a load (run in the enqueue's
    transaction, before the clock starts: the workers see nothing until it commits).
    Without it, the plans of the claims would follow whatever the bench database held when
    it was last analyzed with rows, or none at all on a new one. MariaDB's claims name
    their indexes: nothing to do there."""
    if not on_mariadb():
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE jobs_job")


def enqueue_tasks_one_by_one(count: int) -> float:
    """Jobs/s of django.tasks' ``Task.enqueue``, each task in its own transaction."""
    from bench.peers.task_functions import noop

    reset()
    start = time.perf_counter()
    for _ in range(count):
        noop.enqueue()
    return count / (time.perf_counter() - start)


def cold_drain(count: int, workers: int, through_tasks: bool = False) -> float:
    """Jobs/s of ``count`` no-op jobs queued before ``workers`` plain ``runworker``
    processes are launched, from the launch until none is left: start-up included."""
    from bench.lib.harness import time_cold_drain

    reset()
    first = scalar("SELECT COALESCE(max(id), 0) + 1 FROM jobs_job")
    type_name = NOOP
    with transaction.atomic():
        if through_tasks:
            type_name = enqueue_tasks(count)
        else:
            jobs.enqueue_many(NOOP, ({} for _ in range(count)))
    last = scalar("SELECT max(id) FROM jobs_job")
    figure = time_cold_drain(lambda: launch(workers), lambda: 0 if drained(first, last) else 1, count)
    done = succeeded(first, last, type_name)
    if done != count:
        raise SystemExit(f"Drain including start-up lost jobs: {done} of {count} succeeded.")
    return figure


def start_up(samples: int = 3, through_tasks: bool = False) -> float:
    """Seconds from launching one plain ``runworker`` until it starts a job that waits for
    it (``harness.start_up``), the median of ``samples``."""
    from bench.lib.harness import start_up as measure
    from bench.peers.task_functions import stamp_task

    def enqueue(path: str, t0: float) -> None:
        reset()
        if through_tasks:
            stamp_task.enqueue(path=path, t0=t0)
        else:
            jobs.enqueue("test.stamp", {"path": path, "t0": t0})

    return measure(lambda: launch(1), enqueue, samples)


def burst_exit(samples: int = 3) -> tuple[float, float, float]:
    """A ``runworker --burst`` with one no-op job due, from its launch to its exit (start-up,
    the job, and stopping): seconds; the CPU seconds its processes used (what two workers
    starting at once on two cores compete for); and seconds from the launch to its first
    claim (the job's ``started_at``, set by the claim's statement, on the database server's
    clock, the same machine's). Medians of ``samples``."""
    import resource
    import statistics

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the processes waited for
        return usage.ru_utime + usage.ru_stime

    figures, cpu, claims = [], [], []
    for _ in range(samples):
        reset()
        job_id = jobs.enqueue(NOOP, {}).pk
        launched, start, used = time.time(), time.perf_counter(), children_cpu()
        with launch(1, "--burst") as pool:
            pool.processes[0].wait(timeout=120)
            figures.append(time.perf_counter() - start)
        cpu.append(children_cpu() - used)
        claims.append(started_epoch(job_id) - launched)
        if scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded' AND type = %s", [NOOP]) != 1:
            raise SystemExit("runworker --burst did not run its job.")
    return statistics.median(figures), statistics.median(cpu), statistics.median(claims)


def started_epoch(job_id: int) -> float:
    """When a job was claimed, in seconds since the epoch."""
    from jobs.models import Job

    started = Job.objects.values_list("started_at", flat=True).get(pk=job_id)
    return started.timestamp()


def process_memory(jobs_run: int = 1000) -> dict[str, list[int]]:
    """What each process of one plain ``runworker`` (2 children) holds of its own after
    ``jobs_run`` no-ops: private memory (KiB, what it does not share with the others), by
    role: the supervisor, the forkserver and each child."""
    reset()
    pool = Workers(1)
    try:
        jobs.enqueue_many(NOOP, ({} for _ in range(jobs_run)))
        wait_until(
            lambda: scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'") == jobs_run,
            120,
            f"{jobs_run:,} jobs",
        )
        supervisor = pool.pids()[0]
        roles: dict[str, list[int]] = {"supervisor": [private_kib(supervisor)], "forkserver": [], "child": []}
        for pid in process_children(supervisor):
            grandchildren = process_children(pid)
            if grandchildren:  # the forkserver; the resource tracker has none
                roles["forkserver"].append(private_kib(pid))
                roles["child"].extend(private_kib(child) for child in grandchildren)
    finally:
        pool.stop()
    return roles


def _stamps(path: str) -> list[float]:
    """Milliseconds from enqueue to start, from the lines test.stamp jobs appended."""
    lines = [line.split() for line in Path(path).read_text().splitlines()]
    return [(float(started) - float(t0)) * 1000 for t0, started in lines]


def wake_up(
    samples: int,
    gap: float,
    type_name: str = "test.stamp",
    through_tasks: bool = False,
    poll_interval: float | None = None,
) -> list[float]:
    """Milliseconds from the enqueue call to the job's start, one idle worker.

    ``through_tasks``: the stamp is a django.tasks task on our backend (``Task.enqueue``).
    ``poll_interval``: the worker's ``--poll-interval`` (what wakes it on MariaDB).
    """
    from bench.peers.task_functions import stamp_task

    reset()
    with tempfile.NamedTemporaryFile("w", suffix=".stamps", delete=False) as handle:
        path = handle.name
    pool = Workers(1, *(("--poll-interval", str(poll_interval)) if poll_interval else ()))
    try:
        for _ in range(samples):
            if through_tasks:
                stamp_task.enqueue(path=path, t0=time.time())
            else:
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
    """How the claim of a lane serving several queues reads its rows."""
    from jobs.drivers import mariadb

    with connection.cursor() as cursor:
        if on_mariadb():
            # MariaDB's ANALYZE runs the statement and reports what each step read and took.
            statement = mariadb.CLAIM_QUEUES.format(queues="%s, %s")
            cursor.execute(f"ANALYZE FORMAT=JSON {statement}", ["ai", "default", 32])
            return cursor.fetchone()[0]
        ready = "AND due_later = false " if flags_jobs_due_later() else ""
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
            f"SELECT id FROM jobs_job WHERE status = 'queued' AND queue = ANY(%s) {ready}AND run_at <= now() "
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


def kill_run(each: int, workers: int, kills: int) -> tuple[int, int, int]:
    """What a worker killed at a random moment does to database writes: (plain jobs whose
    row was written twice, atomic jobs whose row was, atomic jobs a kill interrupted).

    ``each`` plain and ``each`` atomic jobs that insert one row and take about 2 ms
    (test.write, test.write_atomic), enqueued interleaved, are drained by ``workers``
    runworker processes while one whole worker (supervisor, forkserver, children) is killed
    with SIGKILL ``kills`` times, evenly through the run, and replaced at once; the
    survivors' reapers bring the dead worker's jobs back after a 3 s lease. A plain job
    writes twice when the kill falls between its row's commit and its acknowledgement; an
    atomic job's row commits with its completion, so never.
    """
    reset()
    with transaction.atomic():
        for start in range(0, each, 100):
            size = min(100, each - start)
            jobs.enqueue_many(WRITE_ATOMIC, ({"sleep": 0.002} for _ in range(size)))
            jobs.enqueue_many(WRITE, ({"sleep": 0.002} for _ in range(size)))
    total = 2 * each
    quick_recovery = {"JOBS_WORKER_LEASE": "3", "JOBS_REAP_AFTER": "5", "JOBS_HEARTBEAT_INTERVAL": "0.5"}

    def succeeded() -> int:
        return scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'")

    pool = Workers(workers, env=quick_recovery)
    try:
        for kill in range(kills):
            target = total * (kill + 1) // (kills + 2)
            wait_until(lambda target=target: succeeded() >= target, 300, "work before a kill", interval=0.005)
            pool.kill_and_replace(kill % workers)
        wait_until(lambda: succeeded() == total, 600, "every job to succeed", interval=0.1)
    finally:
        pool.stop()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT j.type, count(*) FROM jobs_job j"
            " JOIN (SELECT job_id FROM testjobs_execution GROUP BY job_id HAVING count(*) > 1) twice"
            " ON twice.job_id = j.id GROUP BY j.type"
        )
        twice = dict(cursor.fetchall())
    interrupted = scalar("SELECT count(*) FROM jobs_job WHERE type = %s AND attempts > 1", [WRITE_ATOMIC])
    return twice.get(WRITE, 0), twice.get(WRITE_ATOMIC, 0), interrupted


# --- flow control (docs/flow-control.md) --------------------------------------------------------

NOOP_RATED = "test.noop_rated"  # at most 1,000 starts in any second
PAUSE_LIMITED = "test.pause_limited"  # at most 8 running at once
NOOP_LIMITED = "test.noop_limited"  # limits declared that no drain reaches


def rated_drain(count: int, workers: int, rate: int = 1000) -> tuple[float, int]:
    """A drain of ``count`` no-ops under a rate of ``rate`` starts a second: the rate held
    (the starts in the full seconds after the first one, per second: a sliding window lets
    the first second start ``rate`` jobs at once, and the last one is partial) and the most
    starts in any one-second window, both from the rows' start times (the database's
    clock). ``count`` should be at least four times ``rate``."""
    drain(count, workers, type_name=NOOP_RATED)
    with connection.cursor() as cursor:
        cursor.execute("SELECT started_at FROM jobs_job WHERE type = %s ORDER BY started_at", [NOOP_RATED])
        starts = [row[0].timestamp() for row in cursor.fetchall()]
    seconds = max(1, int(starts[-1] - starts[0]) - 1)  # the full seconds after the first
    held = sum(1 for start in starts if starts[0] + 1.0 <= start < starts[0] + 1.0 + seconds)
    sustained = held / seconds
    most, low = 0, 0
    for high, start in enumerate(starts):  # the starts in [start − 1 s, start]
        while starts[low] <= start - 1.0:
            low += 1
        most = max(most, high - low + 1)
    return sustained, most


def limited_drain(
    count: int, workers: int, slots: int, seconds: float, limit: int = 8
) -> tuple[float, float, int]:
    """A drain of ``count`` jobs of ``seconds`` each under a concurrency of ``limit``, on
    ``workers`` processes of ``slots`` slots each: the running jobs sampled every 5 ms
    from the first start to the last start (while jobs were due), as (the mean running,
    the share of samples at the limit, the most seen)."""
    reset()
    pool = Workers(workers, "--queue", f"default:{slots}")
    samples: list[int] = []
    try:
        with transaction.atomic():
            jobs.enqueue_many(PAUSE_LIMITED, ({"seconds": seconds} for _ in range(count)))
        wait_until(
            lambda: scalar("SELECT count(*) FROM jobs_job WHERE status = 'running'") > 0, 60, "a start"
        )
        while scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'"):
            samples.append(scalar("SELECT count(*) FROM jobs_job WHERE status = 'running'"))
            time.sleep(0.005)  # the sampling period, not a wait for something
        wait_until(
            lambda: not scalar("SELECT count(*) FROM jobs_job WHERE status = 'running'"), 120, "the end"
        )
    finally:
        pool.stop()
    return sum(samples) / len(samples), sum(1 for s in samples if s == limit) / len(samples), max(samples)
