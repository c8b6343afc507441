"""The supervisor's result buffer: acknowledgements batched, failures and releases written
at once, nothing lost or repeated through a database outage, and the flush of a stopping
worker. No database: the store verbs are a fake that records its calls."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest
from django.db import OperationalError

from jobs.store import ClaimedJob, Failure
from jobs.worker.guard import DatabaseGuard
from jobs.worker.results import ACK_DELAY, EXIT_FLUSH_TIMEOUT, ResultBuffer

WORKER = "host:1"
BOOM = Failure("RuntimeError", "boom")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert 0.0 <= seconds <= 1.0  # short naps: a stop signal is never kept waiting long
        self.now += seconds or 0.01


class Store:
    """Records each write; raises like an unreachable database while ``down`` (or for
    the next ``fail_after`` writes once that many succeeded)."""

    def __init__(self) -> None:
        self.writes: list[tuple] = []
        self.down = False
        self.fail_after: int | None = None

    def _write(self, *call: object) -> None:
        if self.down or (self.fail_after is not None and len(self.writes) >= self.fail_after):
            raise OperationalError("server closed the connection unexpectedly")
        self.writes.append(call)

    def complete(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None = None
    ) -> None:
        if results is None:
            self._write("complete", worker, list(done))
        else:
            self._write("complete", worker, list(done), list(results))

    def fail(self, worker: str, job_id: int, attempt: int, failure: Failure) -> None:
        self._write("fail", worker, job_id, attempt, failure)

    def release(self, worker: str, items: Sequence[tuple[int, int]], message: str = "") -> None:
        self._write("release", worker, list(items), message)


def job(job_id: int, attempt: int = 1) -> ClaimedJob:
    return ClaimedJob(job_id, "test.noop", "{}", attempt, 3, "default")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def guard(clock) -> DatabaseGuard:
    return DatabaseGuard(60.0, close_connection=lambda: None, clock=clock)


@pytest.fixture
def results(store, guard, clock) -> ResultBuffer:
    return ResultBuffer(WORKER, guard, ack_batch=3, results_store=store, clock=clock, sleep=clock.sleep)


def busy() -> bool:
    return True


def idle() -> bool:
    return False


def test_flush__acknowledgements_in_one_write_then_failures_then_releases_by_message(results, store):
    results.ack(job(1))
    results.ack(job(2, attempt=2))
    results.fail(job(3), BOOM)
    results.release(job(4))
    results.release(job(5), "Stopped at worker shutdown and requeued.")
    results.release(job(6))

    results.flush()

    assert store.writes == [
        ("complete", WORKER, [(1, 1), (2, 2)]),
        ("fail", WORKER, 3, 1, BOOM),
        ("release", WORKER, [(4, 1), (6, 1)], ""),
        ("release", WORKER, [(5, 1)], "Stopped at worker shutdown and requeued."),
    ]
    assert len(results) == 0
    assert results.held_ids() == []


def test_flush__results_are_written_apart_from_plain_acknowledgements(results, store):
    """A task's return value goes in a statement of its own: the common acknowledgement of
    jobs without one never carries a result column."""
    results.ack(job(1))
    results.ack(job(2), '{"sum": 5}')
    results.ack(job(3))
    results.ack(job(4, attempt=2), "[1, 2]")

    assert results.held_ids() == [1, 3, 2, 4]
    results.flush()

    assert store.writes == [
        ("complete", WORKER, [(1, 1), (3, 1)]),
        ("complete", WORKER, [(2, 1), (4, 2)], ['{"sum": 5}', "[1, 2]"]),
    ]
    assert len(results) == 0


def test_flush_due__acknowledgements_with_results_count_towards_the_batch(results, clock):
    results.ack(job(1), "1")
    assert results.ack_deadline() == pytest.approx(clock.now + ACK_DELAY)
    results.ack(job(2))
    assert not results.flush_due(clock.now, busy)
    results.ack(job(3), "3")  # ack_batch=3
    assert results.flush_due(clock.now, busy)


def test_flush__an_empty_buffer_writes_nothing(results, store):
    results.flush()
    results.flush(force=True)
    assert store.writes == []


def test_flush_due__acknowledgements_wait_for_a_batch_while_children_are_busy(results, clock):
    results.ack(job(1))
    results.ack(job(2))
    assert not results.flush_due(clock.now, busy)
    results.ack(job(3))  # ack_batch=3
    assert results.flush_due(clock.now, busy)


def test_flush_due__acknowledgements_wait_at_most_the_ack_delay(results, clock):
    results.ack(job(1))
    clock.now += ACK_DELAY / 2
    results.ack(job(2))  # the deadline stays the oldest one's
    assert results.ack_deadline() == pytest.approx(clock.now + ACK_DELAY / 2)
    assert not results.flush_due(clock.now, busy)
    assert results.flush_due(clock.now + ACK_DELAY / 2, busy)


def test_flush_due__acknowledgements_go_at_once_when_no_child_is_busy(results, clock):
    results.ack(job(1))
    assert results.flush_due(clock.now, idle)


def test_flush_due__failures_and_releases_go_at_once(results, clock, guard):
    assert not results.flush_due(clock.now, idle)
    assert results.ack_deadline() is None
    results.fail(job(1), BOOM)
    assert results.flush_due(clock.now, busy)
    results.flush()
    results.release(job(2))
    assert results.flush_due(clock.now, busy)


def test_flush__an_outage_keeps_every_result_and_its_job_held(results, store, clock, guard):
    results.ack(job(1))
    results.fail(job(2), BOOM)
    results.release(job(3))
    store.down = True

    results.flush()

    assert store.writes == []
    assert sorted(results.held_ids()) == [1, 2, 3]  # still heartbeated: nobody reaps them
    store.down = False
    clock.now = guard.retry_at
    results.flush()
    assert [write[0] for write in store.writes] == ["complete", "fail", "release"]
    assert results.held_ids() == []


def test_flush__an_outage_midway_keeps_only_what_was_not_written(results, store, clock, guard):
    results.ack(job(1))
    results.fail(job(2), BOOM)
    results.fail(job(3), BOOM)
    store.fail_after = 2  # the acknowledgement and the first failure get through

    results.flush()

    assert results.held_ids() == [3]
    store.fail_after = None
    clock.now = guard.retry_at
    results.flush()
    assert store.writes == [
        ("complete", WORKER, [(1, 1)]),
        ("fail", WORKER, 2, 1, BOOM),
        ("fail", WORKER, 3, 1, BOOM),  # each written exactly once
    ]


def test_flush__skipped_during_the_backoff(results, store, clock, guard):
    results.ack(job(1))
    store.down = True
    results.flush()
    store.down = False
    results.flush()  # the backoff is not over: no call at all
    assert results.held_ids() == [1]
    clock.now = guard.retry_at
    results.flush()
    assert store.writes == [("complete", WORKER, [(1, 1)])]


def test_flush_force__keeps_trying_until_the_database_is_back(store, guard, clock):
    start = clock.now

    def back_after_two_seconds(seconds: float) -> None:
        clock.sleep(seconds)
        store.down = clock.now < start + 2.0

    results = ResultBuffer(
        WORKER, guard, ack_batch=3, results_store=store, clock=clock, sleep=back_after_two_seconds
    )
    results.ack(job(1))
    store.down = True
    results.flush(force=True)

    assert store.writes == [("complete", WORKER, [(1, 1)])]
    assert 2.0 <= clock.now - start < EXIT_FLUSH_TIMEOUT


def test_flush_force__gives_up_after_the_timeout_and_says_how_many_are_lost(results, store, clock, caplog):
    results.ack(job(1))
    results.release(job(2))
    store.down = True
    start = clock.now

    with caplog.at_level(logging.ERROR, logger="jobs.worker"):
        results.flush(force=True)

    assert EXIT_FLUSH_TIMEOUT <= clock.now - start < EXIT_FLUSH_TIMEOUT + 1.5
    assert store.writes == []
    assert (
        "Database still unreachable; 2 results not written (their jobs will be reaped and rerun)."
        in caplog.messages
    )
