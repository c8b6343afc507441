"""Job types used by the tests and the benchmarks."""

import ctypes
import json
import logging
import os
import time
from pathlib import Path

from jobs import JobContext, PermanentError, RetryLater, job, periodic
from tests.jobs_app.models import Execution, SlotRun


@job("test.noop", queue="default")
def noop(ctx: JobContext, **payload) -> None:
    """Does nothing: the unit of throughput benchmarks."""


@job("test.pause", queue="default")
def pause(ctx: JobContext, *, seconds: float = 0.0) -> None:
    """Waits and writes nothing: a job of a given length that costs the database only its
    claim and acknowledgement (capacity benchmarks)."""
    if seconds:
        time.sleep(seconds)


@job("test.record", queue="default", attempts=3, backoff=(0.2, 0.2))
def record(ctx: JobContext, *, sleep: float = 0.0) -> None:
    if sleep:
        time.sleep(sleep)
    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())


def _wait_for_gate(gate: str, longest: float = 60.0) -> None:
    """Hold the job until the test creates the file ``gate`` (at most ``longest`` seconds,
    so that a failed test does not leave it running)."""
    deadline = time.monotonic() + longest
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


@job("test.sleep", queue="default", attempts=3, backoff=(0.2,))
def sleep(ctx: JobContext, *, seconds: float, marker: str = "", gate: str = "") -> None:
    if marker:
        Path(marker).write_text(str(os.getpid()))
    if gate:
        _wait_for_gate(gate)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.02)
    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())


@job("test.offline", queue="default", attempts=3, backoff=(0.2,))
def offline(ctx: JobContext, *, seconds: float, tries: str) -> None:
    """Runs ``seconds`` without the database (its try outlives an outage of it unharmed),
    noting each of its tries' attempt in the file ``tries`` as it starts."""
    with open(tries, "a") as noted:
        noted.write(f"{ctx.attempt}\n")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.02)


@job("test.sockets", queue="default", attempts=1)
def sockets(ctx: JobContext, *, path: str) -> None:
    """Writes how many TCP sockets this process holds: a child's own database connection,
    opened as it started; a child that inherited its supervisor's (or forkserver's) would
    hold two."""
    fds = Path("/proc/self/fd")
    inodes = {os.readlink(fds / fd)[8:-1] for fd in os.listdir(fds) if _is_socket(fds / fd)}
    tcp = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with open(table) as rows:
            tcp |= {row.split()[9] for row in list(rows)[1:]}
    Path(path).write_text(str(len(inodes & tcp)))


def _is_socket(fd: Path) -> bool:
    try:
        return os.readlink(fd).startswith("socket:[")
    except OSError:
        return False  # closed meanwhile (the directory listing's own descriptor)


@job("test.exit", queue="default", attempts=2, backoff=(0.2,))
def exit_process(ctx: JobContext, *, code: int = 1) -> None:
    os._exit(code)


@job("test.kill_worker", queue="default", attempts=3, backoff=(600,))
def kill_worker(ctx: JobContext, *, marker: str) -> None:
    """Kills the whole worker it runs in (its process group), as an OOM kill of the task
    would; writes ``marker`` first, once per run."""
    with open(marker, "a") as out:
        out.write(f"{ctx.attempt}\n")
    os.killpg(os.getpgid(0), 9)


@job("test.segfault", queue="default", attempts=1)
def segfault(ctx: JobContext) -> None:
    ctypes.string_at(0)


@job("test.fail", queue="default", attempts=3, backoff=(30, 120, 480), backoff_cap=1800)
def fail(ctx: JobContext, *, permanent: bool = False) -> None:
    if permanent:
        raise PermanentError("This input can never work.")
    raise RuntimeError("boom")


@job("test.flaky", queue="default", attempts=3, backoff=(0.1,))
def flaky(ctx: JobContext, *, fail_times: int) -> None:
    if ctx.attempt <= fail_times:
        raise ConnectionError(f"transient failure on try {ctx.attempt}")
    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())


@job("test.progress", queue="default", attempts=1)
def progress(ctx: JobContext, *, steps: int = 5, pause: float = 0.6, gate: str = "") -> None:
    """Reports each of ``steps``; with ``gate``, holds after the first until the file exists."""
    for step in range(1, steps + 1):
        ctx.progress(step * 100 // steps, f"step {step} of {steps}")
        time.sleep(pause)
        if gate:
            _wait_for_gate(gate)


@job("test.report", queue="default", attempts=1)
def report(ctx: JobContext, *, messages: list[str], gate: str = "") -> None:
    """Reports each message at once, one right after the other, then holds until ``gate``
    exists: a handler busy in a long step right after its last report."""
    for number, message in enumerate(messages, start=1):
        ctx.progress(number * 10, message)
    if gate:
        _wait_for_gate(gate)


@job("test.slow", queue="default", attempts=3, timeout=0.5, backoff=(0.1,))
def slow(ctx: JobContext, *, seconds: float = 5.0) -> None:
    time.sleep(seconds)


@job("test.ai", queue="ai", attempts=2)
def ai_work(ctx: JobContext, *, seconds: float = 0.0, marker: str = "", gate: str = "") -> None:
    if marker:
        Path(marker).write_text(str(os.getpid()))
    if gate:
        _wait_for_gate(gate)
    if seconds:
        time.sleep(seconds)
    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())


def _stamp(path: str, t0: float) -> None:
    started = time.time()
    with open(path, "a") as out:
        out.write(f"{t0} {started}\n")


@job("test.stamp", queue="default", attempts=1)
def stamp(ctx: JobContext, *, path: str, t0: float) -> None:
    """Appends (enqueue time, start time) to a file: how benchmarks time wake-up."""
    _stamp(path, t0)


@job("test.stamp_ai", queue="ai", attempts=1)
def stamp_ai(ctx: JobContext, *, path: str, t0: float) -> None:
    _stamp(path, t0)


@job("test.keyed", queue="default", attempts=2, dedupe="thing:{thing_id}")
def keyed(ctx: JobContext, *, thing_id: int | str, note: str = "") -> None:
    """Owns its dedupe key: one queued or running job per thing."""


@job("test.rate_limited", queue="default", attempts=1)
def rate_limited(ctx: JobContext, *, path: str, waits: int = 2, delay: float = 0.5) -> None:
    """Asks to run later ``waits`` times (like a host answering 429), then succeeds; each
    run appends "start <epoch> attempt <n>" and, when it waits, "until <epoch>" to ``path``."""
    log = Path(path)
    runs = log.read_text().count("start") if log.exists() else 0
    with log.open("a") as out:
        out.write(f"start {time.time()} attempt {ctx.attempt}\n")
        if runs < waits:
            wait = RetryLater(f"Rate limited ({runs + 1}/{waits}).", delay=delay)
            out.write(f"until {wait.at.timestamp()}\n")
            raise wait


# --- exactly-once database effects: twins that differ only in ``atomic`` -------------------


def _write(
    ctx: JobContext,
    *,
    sleep: float = 0.0,
    marker: str = "",
    gate: str = "",
    hold_on: list[int] | None = None,
    fail: str = "",
    progress: bool = False,
) -> None:
    """Inserts this try's Execution row, then, on the tries listed in ``hold_on``, writes
    ``marker`` (the child's pid, its database session's backend pid, the try) and holds
    until ``gate`` exists; ``fail`` raises after the insert. The row is committed at once
    by the plain twin, with the job's completion by the atomic one."""

    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())
    if progress:
        ctx.progress(50, "row written")
    if sleep:
        time.sleep(sleep)
    if ctx.attempt in (hold_on or []):
        backend = _session_id()
        Path(marker).write_text(json.dumps({"pid": os.getpid(), "backend": backend, "attempt": ctx.attempt}))
        _wait_for_gate(gate, longest=120.0)
    if fail:
        raise RuntimeError(fail)


def _session_id() -> int:
    """The database session this process's connection holds (its server-side id)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT CONNECTION_ID()" if connection.vendor == "mysql" else "SELECT pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


@job("test.session", queue="default", attempts=1)
def session(ctx: JobContext, *, path: str) -> None:
    """Appends this child's pid, its database session's id and the time to ``path``: which
    connection a try used."""
    line = json.dumps({"pid": os.getpid(), "backend": _session_id(), "at": time.time()})
    with open(path, "a") as handle:
        handle.write(line + "\n")


# Many attempts: the kill tests take a job's try away again and again.
write = job("test.write", queue="default", attempts=10, backoff=(0.1,))(_write)
write_atomic = job("test.write_atomic", queue="default", attempts=10, backoff=(0.1,), atomic=True)(_write)
write_atomic_timeout = job(
    "test.write_atomic_timeout", queue="default", attempts=1, timeout=5.0, atomic=True
)(_write)


@job("test.noop_atomic", queue="default", atomic=True)
def noop_atomic(ctx: JobContext, **payload) -> None:
    """Does nothing, in a transaction with its completion: the atomic unit of the benchmarks."""


# --- flow control (tests/*/test_flow_*.py): types with fleet-wide limits --------------------
# Each holds its job for ``seconds`` (or until ``gate`` exists) and records its run.


def _held(ctx: JobContext, seconds: float, gate: str) -> None:
    if gate:
        _wait_for_gate(gate)
    if seconds:
        time.sleep(seconds)
    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())


@job("test.flow_type", queue="default", concurrency=2, backoff=(0.2,))
def flow_type(ctx: JobContext, *, seconds: float = 0.0, gate: str = "") -> None:
    """At most two running at once across the fleet."""
    _held(ctx, seconds, gate)


@job("test.flow_leased", queue="default", rate="100/s")
def flow_leased(ctx: JobContext) -> None:
    """At most a hundred starts in any second across the fleet; leased while far from it
    (``jobs.flow.leases``, with the fleet's ``JOBS_FLOW_LEASE`` small)."""


@job("test.flow_key", queue="default", concurrency=1, concurrency_key="account:{account}", backoff=(0.2,))
def flow_key(ctx: JobContext, *, account: int | None = None, seconds: float = 0.0, gate: str = "") -> None:
    """At most one running per account, any number of accounts at once."""
    _held(ctx, seconds, gate)


@job("test.flow_key_too", queue="default", concurrency=1, concurrency_key="account:{account}")
def flow_key_too(ctx: JobContext, *, account: int, seconds: float = 0.0, gate: str = "") -> None:
    """Shares ``test.flow_key``'s accounts: one of either runs per account."""
    _held(ctx, seconds, gate)


@job("test.flow_rate", queue="default", rate="5/s")
def flow_rate(ctx: JobContext, *, seconds: float = 0.0) -> None:
    """At most five starts in any second across the fleet."""
    _held(ctx, seconds, "")


@job("test.flow_rate_key", queue="default", rate="2/s", rate_key="host:{host}")
def flow_rate_key(ctx: JobContext, *, host: str) -> None:
    """At most two starts a second per host."""


@job("test.limited_queue", queue="limited", backoff=(0.2,))
def on_limited_queue(ctx: JobContext, *, seconds: float = 0.0, gate: str = "") -> None:
    """A job of the queue the tests give limits of its own (``jobs.set_queue_limits``)."""
    _held(ctx, seconds, gate)


# The benchmark's limits case (bench/throughput.py --only limits): no-ops under a rate of
# 1,000 starts a second; jobs of a given length under a concurrency of 8; no-ops with limits
# declared that a drain never reaches (what declaring costs the claim).
@job("test.noop_rated", queue="default", rate="1000/s")
def noop_rated(ctx: JobContext, **payload) -> None:
    """Does nothing, at most 1,000 starts in any second."""


@job("test.pause_limited", queue="default", concurrency=8)
def pause_limited(ctx: JobContext, *, seconds: float = 0.0) -> None:
    """Waits, at most eight at once across the fleet."""
    if seconds:
        time.sleep(seconds)


@job("test.noop_limited", queue="default", concurrency=100_000, rate="100000/s")
def noop_limited(ctx: JobContext, **payload) -> None:
    """Does nothing, under limits no drain reaches."""


@job("test.noop_capped", queue="default", concurrency=100_000)
def noop_capped(ctx: JobContext, **payload) -> None:
    """Does nothing, under a concurrency no drain reaches (and no rate)."""


# --- timers of the timer tests: installed paused, resumed by the test that uses one --------


def _record_slot(timer: str, slot) -> str:
    SlotRun.objects.create(timer=timer, slot=slot, pid=os.getpid())
    return f"ran {slot:%H:%M:%S}"


# The fleet test: every second, three workers, kills, a command at the same moment. Atomic,
# so a run that a kill cut short leaves no row, and its retry writes the one row.
@periodic(
    "test.every_second",
    every=1,
    overlap="queue",
    catch_up="all",
    atomic=True,
    attempts=20,
    backoff=(0.2,),
    paused=True,
)
def every_second(*, slot) -> str:
    time.sleep(0.3)  # long enough for a kill to land mid-run now and then
    return _record_slot("test.every_second", slot)


@periodic("test.catch_up_skip", every=1, catch_up="skip", paused=True)
def catch_up_skip(*, slot) -> str:
    return _record_slot("test.catch_up_skip", slot)


@periodic("test.catch_up_once", every=1, catch_up="once", paused=True)
def catch_up_once(*, slot) -> str:
    return _record_slot("test.catch_up_once", slot)


@periodic("test.catch_up_all", every=1, catch_up="all", paused=True)
def catch_up_all(*, slot) -> str:
    return _record_slot("test.catch_up_all", slot)


# Across a daylight-saving change in Berlin: at 02:00 local time every day, and every two
# seconds (the worker's clock is put just before the change, JOBS_SCHEDULE_CLOCK_OFFSET;
# the ticks catch up every slot, so a worker slow to start still runs each one, and queue
# behind a run still going, so a loaded machine skips none of them).
@periodic("test.dst_daily", cron="0 2 * * *", timezone="Europe/Berlin", catch_up="skip", paused=True)
def dst_daily(*, slot) -> str:
    return _record_slot("test.dst_daily", slot)


@periodic(
    "test.dst_ticks",
    cron="*/2 * * * * *",
    timezone="Europe/Berlin",
    catch_up="all",
    overlap="queue",
    paused=True,
)
def dst_ticks(*, slot) -> str:
    return _record_slot("test.dst_ticks", slot)


chatty_logger = logging.getLogger("tests.chatty")


@job("test.chatty", queue="default", attempts=3, backoff=(0.1,))
def chatty(
    ctx: JobContext, *, lines: int = 3, fail_times: int = 0, gate: str = "", crash: bool = False
) -> None:
    """Logs ``lines`` lines a try (and a DEBUG line, below the default level); the first
    try waits for ``gate`` after its first line; the first ``fail_times`` tries fail; with
    ``crash`` the process dies after the first line."""
    chatty_logger.info("try %d line 0 \x00\x1b[31mred\x1b[0m", ctx.attempt)
    if crash:
        os._exit(3)
    if gate and ctx.attempt == 1:
        _wait_for_gate(gate)
    for number in range(1, lines):
        chatty_logger.info("try %d line %d", ctx.attempt, number)
    chatty_logger.debug("try %d debug detail", ctx.attempt)
    if ctx.attempt <= fail_times:
        raise RuntimeError(f"try {ctx.attempt} failed after logging")


# --- workflows (jobs.workflow): steps that write a row, return, fail or add steps ----------


def _step(
    ctx: JobContext,
    *,
    value: object = None,
    fail_unless: str = "",
    add: int = 0,
    sleep: float = 0.0,
    gate: str = "",
    upstream: dict | None = None,
) -> dict:
    """Writes this try's Execution row; fails for good unless the file ``fail_unless``
    exists; adds ``add`` steps to its workflow; returns its value and the names of the
    steps it waited for (and, given ``results_as="upstream"``, their results)."""
    Execution.objects.create(job_id=ctx.job_id, attempt=ctx.attempt, pid=os.getpid())
    if gate:
        _wait_for_gate(gate)
    if sleep:
        time.sleep(sleep)
    if fail_unless and not Path(fail_unless).exists():
        raise PermanentError(f"{fail_unless} does not exist yet.")
    if add:
        ctx.add_steps(*(step_of(f"{ctx.step_name}/{number}") for number in range(1, add + 1)))
    returned = {"value": value, "upstream": sorted(ctx.upstream_results)}
    if upstream is not None:
        returned["given"] = upstream
    return returned


step_atomic = job("test.step", queue="default", attempts=10, backoff=(0.1,), atomic=True)(_step)
step_plain = job("test.step_plain", queue="default", attempts=10, backoff=(0.1,))(_step)
# One at a time across the fleet: a workflow's steps are held to their type's limits.
step_limited = job("test.step_limited", queue="default", attempts=10, backoff=(0.1,), concurrency=1)(_step)


def step_of(value: str) -> object:
    """An atomic test step named by its value."""
    from jobs import step

    return step("test.step", {"value": value}, name=value)


@job("test.returns_object", queue="default", attempts=3)
def returns_object(ctx: JobContext, **payload) -> object:
    """Returns what JSON cannot hold: a step of this type cannot hand it on."""
    return object()


# A timer whose run starts a workflow (tests/integration/test_workflows.py): one per slot,
# the slot its key, so a retried run of the slot starts none while the first still runs.
@periodic("test.starts_workflow", every=60, paused=True)
def starts_workflow(*, slot) -> str:
    from jobs import chain, start

    flow = chain(step_of("fetch"), step_of("derive"), step_of("publish"))
    workflow = start(flow, name="test.timer_flow", dedupe_key=f"slot:{slot:%Y-%m-%dT%H:%M:%SZ}")
    return f"workflow #{workflow.pk}"
