"""Settling the batch of a child the supervisor had to stop: what the child reported before
it was stopped counts. No process and no database: the child is a pipe and a shared
array, the store a fake that records its calls."""

from __future__ import annotations

import logging
import multiprocessing
import re
import time
from collections.abc import Iterator, Sequence

import pytest

from jobs.store import ClaimedJob, Failure
from jobs.worker import messages
from jobs.worker.messages import CURRENT, STARTED, JobEnded
from jobs.worker.outcome import Outcome
from jobs.worker.pool import Child
from jobs.worker.progress import ProgressSlot
from jobs.worker.results import ResultBuffer
from jobs.worker.supervisor import Supervisor, WorkerOptions

WORKER = "salvage:1"
BOOM = Failure("RuntimeError", "boom")


class Store:
    def __init__(self) -> None:
        self.writes: list[tuple] = []

    def complete(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None = None
    ) -> None:
        self.writes.append(("complete", list(done), None if results is None else list(results)))

    def fail(self, worker: str, job_id: int, attempt: int, failure: Failure) -> None:
        self.writes.append(("fail", job_id, failure.error_class))

    def release(self, worker: str, items: Sequence[tuple[int, int]], message: str = "") -> None:
        self.writes.append(("release", list(items)))


class Process:
    """Stands in for the child's process: already gone when asked."""

    exitcode = -9
    sentinel = -1  # never registered with the selector here

    def is_alive(self) -> bool:
        return False

    def kill(self) -> None:
        pass

    def join(self, timeout: float | None = None) -> None:
        pass


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def supervisor(store: Store) -> Supervisor:
    supervisor = Supervisor(WorkerOptions(lanes=[(["default"], 1)], name=WORKER))
    supervisor.results = ResultBuffer(WORKER, supervisor.db, ack_batch=32, results_store=store)
    supervisor.endings.results = supervisor.results
    supervisor.stopping = True  # a stopped child is not replaced by a new process here
    return supervisor


@pytest.fixture
def pipe() -> Iterator[tuple[multiprocessing.connection.Connection, multiprocessing.connection.Connection]]:
    ours, theirs = multiprocessing.Pipe()
    yield ours, theirs
    ours.close()
    theirs.close()


def running(supervisor: Supervisor, conn, batch: list[ClaimedJob], index: int, started: float) -> Child:
    """A child of the supervisor's lane, running job ``index`` of ``batch`` since ``started``."""
    child = Child.__new__(Child)
    child.lane = supervisor.lanes[0]
    child.state = multiprocessing.RawArray("d", 2)
    child.progress, child.progress_written = ProgressSlot(multiprocessing.get_context()), 0
    child.conn, child.process = conn, Process()
    child.batch, child.settled, child.returned, child.sent_at = batch, set(), {}, started
    child.batches_done = 0
    child.state[CURRENT], child.state[STARTED] = index, started
    child.lane.children.append(child)
    return child


BATCH = [
    ClaimedJob(1, "tests.tasks_backend.tasks.add", '{"args": [2, 3], "kwargs": {}}', 1, 3, "default"),
    ClaimedJob(2, "test.noop", "{}", 1, 3, "default"),
    ClaimedJob(3, "test.slow", "{}", 1, 3, "default"),  # times out after 0.5 s
    ClaimedJob(4, "test.noop", "{}", 1, 3, "default"),
]


def test_timeout__reports_read_after_the_stop_still_settle_the_jobs_before_it(supervisor, store, pipe):
    ours, theirs = pipe
    running(supervisor, ours, BATCH, index=2, started=time.monotonic() - 10)
    messages.send(theirs, JobEnded(0, Outcome.succeeded("5")))  # sent, not yet read, when the timeout hits
    messages.send(theirs, JobEnded(1, Outcome.failed(BOOM)))

    supervisor._stop_overdue(time.monotonic())
    supervisor.results.flush()

    assert store.writes == [
        ("complete", [(1, 1)], ["5"]),  # its result kept
        ("fail", 2, "RuntimeError"),  # failed, not counted as done
        ("fail", 3, "JobTimeout"),
        ("release", [(4, 1)]),  # never started
    ]


def test_timeout__a_batch_that_ended_just_before_the_stop_is_done(supervisor, store, pipe):
    ours, theirs = pipe
    child = running(supervisor, ours, BATCH[2:3], index=0, started=time.monotonic() - 10)
    messages.send(theirs, messages.BATCH_DONE)

    supervisor._stop_overdue(time.monotonic())
    supervisor.results.flush()

    assert store.writes == [("complete", [(3, 1)], None)]
    assert child not in supervisor.lanes[0].children  # stopped all the same


def test_log__says_whether_a_failed_try_is_retried_as_the_store_decides(supervisor, pipe, caplog):
    ours, theirs = pipe
    batch = [
        ClaimedJob(5, "test.noop", "{}", 1, 3, "default"),
        ClaimedJob(6, "test.noop", "{}", 3, 3, "default"),  # its last attempt
        ClaimedJob(7, "test.noop", "{}", 1, 3, "default"),
    ]
    child = running(supervisor, ours, batch, index=2, started=time.monotonic())
    for position, failure in enumerate(
        [BOOM, BOOM, Failure("jobs.errors.PermanentError", "no", retryable=False)]
    ):
        messages.send(theirs, JobEnded(position, Outcome.failed(failure)))

    with caplog.at_level(logging.WARNING, logger="jobs.worker"):
        for _ in batch:
            assert supervisor.endings.collect(child)

    ends = [re.sub(r" [\d.]+ms ", " ", record.getMessage()) for record in caplog.records]
    assert ends == [
        "end test.noop #5 attempt 1/3 failed, to be retried: RuntimeError: boom",
        "end test.noop #6 attempt 3/3 failed, for good: RuntimeError: boom",
        "end test.noop #7 attempt 1/3 failed, for good: jobs.errors.PermanentError: no",
    ]
