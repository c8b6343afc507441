"""The result buffer: outcomes of finished jobs, held until they are written.

Acknowledgements of succeeded jobs wait, while children are busy, for a batch
(``JOBS_ACK_BATCH``) or at most ``ACK_DELAY``, so that many are written in one statement;
those that carry a result (django.tasks tasks) go in a statement of their own, so the
common acknowledgement stays as lean as it was. What an acknowledgement returns is counted
for the charts' rollup (``jobs.store.complete``; the supervisor writes the counts at most
once a second, ``jobs.rollup``); the tries' logs (``jobs.try_log``) wait with the
acknowledgements and go in one statement. Failures, rescheduled jobs (``RetryLater``)
and jobs handed back are written at the next flush. During a database outage
everything stays here: the jobs remain this worker's (``held_ids`` keeps their heartbeat
going once the database is back), and each write is fenced by worker and attempt, so a
write retried after an outage cannot apply twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from jobs import store, tracing
from jobs.store import ClaimedJob, Failure
from jobs.try_log import Log
from jobs.worker.guard import DatabaseGuard

logger = logging.getLogger("jobs.worker")

ACK_DELAY = 0.05  # longest an acknowledgement waits for a batch while children are busy
EXIT_FLUSH_TIMEOUT = 30.0  # how long a worker that is stopping tries to write its results


class ResultStore(Protocol):
    """The store verbs the buffer writes with (``jobs.store``; a fake in unit tests)."""

    def complete(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None = None
    ) -> object: ...

    def fail(self, worker: str, job_id: int, attempt: int, failure: Failure) -> object: ...

    def release(self, worker: str, items: Sequence[tuple[int, int]], message: str = "") -> object: ...

    def reschedule(self, worker: str, job_id: int, attempt: int, at: datetime, reason: str) -> object: ...

    def save_try_logs(self, logs: Sequence[tuple[int, int, Log]]) -> object: ...

    def count_settled(self, job_ids: Sequence[int]) -> object: ...


class ResultBuffer:
    def __init__(
        self,
        worker: str,
        guard: DatabaseGuard,
        *,
        ack_batch: int,
        results_store: ResultStore = store,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.worker = worker
        self._guard = guard
        self._ack_batch = ack_batch
        self._store = results_store
        self._clock = clock
        self._sleep = sleep
        self._acks: list[tuple[int, int]] = []  # (job id, attempt)
        self._returned: list[tuple[int, int, str]] = []  # (job id, attempt, result as JSON text)
        self._oldest_ack = 0.0  # when the first of the waiting acknowledgements came in
        self._failures: list[tuple[int, int, Failure]] = []
        self._releases: list[tuple[int, int, str]] = []  # (job id, attempt, message for the row)
        self._reschedules: list[tuple[int, int, datetime, str]] = []  # (job id, attempt, run at, reason)
        # The queues of the jobs held to a concurrency limit whose outcome is buffered, and of
        # those written since the supervisor last asked (``ended_queues``): their slots are
        # free in the database once it is written.
        self._queues: set[str] = set()
        self._ended: set[str] = set()
        self._logs: list[tuple[int, int, Log]] = []  # (job id, attempt, what the try logged)
        self._settled: list[int] = []  # atomic jobs that committed their success themselves

    def __len__(self) -> int:
        return (
            len(self._acks)
            + len(self._returned)
            + len(self._failures)
            + len(self._releases)
            + len(self._reschedules)
            + len(self._logs)
            + len(self._settled)
        )

    # --- filling ------------------------------------------------------------------------

    def ack(self, job: ClaimedJob, result: str | None = None) -> None:
        """The job succeeded (and returned ``result``, JSON text, if it keeps one)."""
        self._held(job)
        if not self._acks and not self._returned and not self._logs:
            self._oldest_ack = self._clock()
        if result is None:
            self._acks.append((job.id, job.attempt))
        else:
            self._returned.append((job.id, job.attempt, result))

    def fail(self, job: ClaimedJob, failure: Failure) -> None:
        """The try failed: the store retries it later or fails it for good."""
        self._held(job)
        self._failures.append((job.id, job.attempt, failure))

    def release(self, job: ClaimedJob, message: str = "") -> None:
        """Hand the job back as queued without using up its attempt (never started, or
        cut off at shutdown); ``message`` says so on its row."""
        self._held(job)
        self._releases.append((job.id, job.attempt, message))

    def reschedule(self, job: ClaimedJob, at: datetime, reason: str) -> None:
        """Not a failure: the job runs again at ``at``, its attempt given back."""
        self._held(job)
        self._reschedules.append((job.id, job.attempt, at, reason))

    def _held(self, job: ClaimedJob) -> None:
        if job.held:  # a job held to a concurrency limit: its slot frees once this is written
            self._queues.add(job.queue)

    def ended_queues(self) -> set[str]:
        """The queues of the jobs held to a concurrency limit whose outcome was written
        since the last call: their slots are free."""
        ended, self._ended = self._ended, set()
        return ended

    def log(self, job: ClaimedJob, log: Log) -> None:
        """What the try logged: written with the next flush, after its outcome."""
        if not self._acks and not self._returned and not self._logs:
            self._oldest_ack = self._clock()
        self._logs.append((job.id, job.attempt, log))

    def settled(self, job: ClaimedJob) -> None:
        """An atomic job committed its own success: only the rollup is left to count it
        (and, held to a concurrency limit, its slot is free already)."""
        if job.held:
            self._ended.add(job.queue)
        if not self._acks and not self._returned and not self._logs and not self._settled:
            self._oldest_ack = self._clock()
        self._settled.append(job.id)

    def held_ids(self) -> list[int]:
        """Jobs whose outcome is not written yet: still running as far as the database knows."""
        held = [job_id for job_id, _ in self._acks]
        held += [job_id for job_id, _, _ in self._returned]
        held += [job_id for job_id, _, _ in self._failures]
        held += [job_id for job_id, _, _ in self._releases]
        held += [job_id for job_id, _, _, _ in self._reschedules]
        return held

    def requeues(self) -> bool:
        """Are failures or postponements waiting to be written (jobs queued for later)?"""
        return bool(self._failures or self._reschedules)

    # --- writing ------------------------------------------------------------------------

    def flush_due(self, now: float, children_busy: Callable[[], bool]) -> bool:
        """Should the buffer be written now? Acknowledgements wait for a batch while
        children are busy; anything else, an idle moment, an acknowledgement older than
        ACK_DELAY, or one of a job that holds a concurrency slot (another job is waiting for
        it: ``ClaimedJob.held``) is written at once."""
        if self._failures or self._releases or self._reschedules or self._queues:
            return True
        waiting = len(self._acks) + len(self._returned) + len(self._logs) + len(self._settled)
        if not waiting:
            return False
        return waiting >= self._ack_batch or now >= self._oldest_ack + ACK_DELAY or not children_busy()

    def ack_deadline(self) -> float | None:
        """When the waiting acknowledgements are due at the latest; None if there are none."""
        if self._queues:
            return self._oldest_ack  # a slot is waited for: now
        waiting = self._acks or self._returned or self._logs or self._settled
        return self._oldest_ack + ACK_DELAY if waiting else None

    def flush(self, *, force: bool = False) -> None:
        """Write everything: acknowledgements in one statement, then failures, then
        releases. On an outage it all stays for the next flush; with ``force`` (the worker
        is stopping) it keeps trying for up to EXIT_FLUSH_TIMEOUT seconds."""
        deadline = self._clock() + (EXIT_FLUSH_TIMEOUT if force else 0.0)
        while self:
            self._guard.call(self._write)
            if not self or not force:
                return
            if self._clock() >= deadline:
                logger.error(
                    "Database still unreachable; %d results not written (their jobs will be reaped and rerun).",
                    len(self),
                )
                return
            self._sleep(max(0.0, min(self._guard.retry_at - self._clock(), 1.0)))

    def _write(self) -> None:
        # Each list is emptied only once written: an outage midway keeps the rest.
        if self._acks:
            began = time.time_ns()
            self._store.complete(self.worker, self._acks)
            tracing.record(
                "jobs.complete", began, **{"jobs.count": len(self._acks), "jobs.worker": self.worker}
            )
            self._acks = []
        if self._returned:
            done = [(job_id, attempt) for job_id, attempt, _ in self._returned]
            self._store.complete(self.worker, done, [result for _, _, result in self._returned])
            self._returned = []
        while self._failures:
            job_id, attempt, failure = self._failures[0]
            self._store.fail(self.worker, job_id, attempt, failure)
            self._failures.pop(0)
        while self._reschedules:
            job_id, attempt, at, reason = self._reschedules[0]
            self._store.reschedule(self.worker, job_id, attempt, at, reason)
            self._reschedules.pop(0)
        if self._releases:
            by_message: dict[str, list[tuple[int, int]]] = {}
            for job_id, attempt, message in self._releases:
                by_message.setdefault(message, []).append((job_id, attempt))
            for message, items in by_message.items():
                self._store.release(self.worker, items, message)
            self._releases = []
        if self._logs:  # one statement for every try's log, whatever its outcome
            self._store.save_try_logs(self._logs)
            self._logs = []
        if self._settled:
            self._store.count_settled(self._settled)
            self._settled = []
        self._ended |= self._queues
        self._queues = set()
