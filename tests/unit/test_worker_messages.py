"""The records a supervisor and its child processes exchange, sent through a real pipe (no
process needed): each arrives as the record that was sent, and the ones sent for every
batch (or every atomic job) carry no class on the wire."""

from __future__ import annotations

import multiprocessing
import pickletools
from datetime import UTC, datetime

import pytest

from jobs.store import ClaimedJob, Failure
from jobs.worker import messages
from jobs.worker.messages import BATCH_DONE, STOP, BatchDone, JobEnded, RunBatch, Stop
from jobs.worker.outcome import Kind, Outcome


@pytest.fixture
def pipe():
    supervisor_end, child_end = multiprocessing.Pipe()
    yield supervisor_end, child_end
    supervisor_end.close()
    child_end.close()


BATCH = [
    ClaimedJob(7, "test.noop", '{"n": 1}', 1, 3, "default"),
    ClaimedJob(8, "test.noop", "{}", 2, 3, "default"),
]


def test_run_batch__arrives_with_every_job_in_order(pipe):
    supervisor_end, child_end = pipe
    messages.send(supervisor_end, RunBatch(BATCH))
    received = messages.receive_in_child(child_end)
    assert isinstance(received, RunBatch)
    assert [tuple(job) for job in received.jobs] == [tuple(job) for job in BATCH]


def test_stop__arrives_as_stop(pipe):
    supervisor_end, child_end = pipe
    messages.send(supervisor_end, STOP)
    assert isinstance(messages.receive_in_child(child_end), Stop)


def test_job_failed__arrives_with_its_position_and_failure(pipe):
    supervisor_end, child_end = pipe
    failure = Failure("RuntimeError", "boom", "Traceback …", retryable=False)
    messages.send(child_end, JobEnded(1, Outcome.failed(failure)))
    received = messages.receive_in_supervisor(supervisor_end)
    assert received == JobEnded(1, Outcome.failed(failure))
    assert received.outcome.kind is Kind.FAILED


@pytest.mark.parametrize("committed", [True, False])
def test_job_settled__arrives_with_its_position_and_how_it_ended(pipe, committed):
    supervisor_end, child_end = pipe
    messages.send(child_end, JobEnded(3, Outcome.settled(committed)))
    assert messages.receive_in_supervisor(supervisor_end) == JobEnded(3, Outcome.settled(committed))


def test_job_returned__arrives_with_its_position_and_value(pipe):
    supervisor_end, child_end = pipe
    messages.send(child_end, JobEnded(2, Outcome.succeeded('{"sum": 5}')))
    assert messages.receive_in_supervisor(supervisor_end) == JobEnded(2, Outcome.succeeded('{"sum": 5}'))


def test_batch_done__arrives_as_batch_done(pipe):
    supervisor_end, child_end = pipe
    messages.send(child_end, BATCH_DONE)
    assert isinstance(messages.receive_in_supervisor(supervisor_end), BatchDone)


@pytest.mark.parametrize(
    "message",
    [
        RunBatch(BATCH),
        BATCH_DONE,
        STOP,
        JobEnded(0, Outcome.settled(True)),
        JobEnded(0, Outcome.succeeded("5")),
    ],
    ids=["RunBatch", "BatchDone", "Stop", "settled", "succeeded"],
)
def test_per_batch_messages__pickle_no_class(pipe, message):
    # Naming a class in a pickle costs a module lookup on both sides, on every batch.
    sender, receiver = pipe
    messages.send(sender, message)
    raw = receiver.recv_bytes()
    named = [op.name for op, _, _ in pickletools.genops(raw) if op.name in {"GLOBAL", "STACK_GLOBAL"}]
    assert named == []


def test_job_rescheduled__arrives_with_its_position_time_and_reason(pipe):
    supervisor_end, child_end = pipe
    at = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    messages.send(child_end, JobEnded(0, Outcome.postponed(at, "rate limit")))
    assert messages.receive_in_supervisor(supervisor_end) == JobEnded(0, Outcome.postponed(at, "rate limit"))
