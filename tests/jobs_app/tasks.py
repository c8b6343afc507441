"""Job types used by the tests and the benchmarks."""

import ctypes
import os
import time
from pathlib import Path

from jobs import JobContext, PermanentError, job
from tests.jobs_app.models import Execution


@job("test.noop", queue="default")
def noop(ctx: JobContext, **payload) -> None:
    """Does nothing: the unit of throughput benchmarks."""


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
