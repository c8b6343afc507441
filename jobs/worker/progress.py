"""Progress of a running job: reported by the handler in its child process, written to the
job's row by the supervisor.

A handler may report as often as it likes. Each report goes into the child's slot in shared
memory (``ProgressSlot``: the latest report only, behind a lock), which costs microseconds
and no database round trip. The supervisor writes a slot that changed at most once per
``JOBS_PROGRESS_INTERVAL`` (``ProgressWriter``), and once more when the job ends. So a
report is never dropped for coming too soon after the previous one: the latest one reaches
the row when the interval ends, also when the handler is busy in a long step by then, and
it is written on the supervisor's session, outside any transaction the handler holds open.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from jobs.worker.guard import DatabaseGuard

logger = logging.getLogger("jobs.worker")

MESSAGE_CHARS = 500  # jobs_job.progress_message
MESSAGE_BYTES = MESSAGE_CHARS * 4  # UTF-8 takes at most four bytes a character

# Positions in the slot's numbers.
_SEQUENCE, _JOB, _ATTEMPT, _PERCENT, _LENGTH = range(5)


class Report(NamedTuple):
    job_id: int
    attempt: int
    percent: int
    message: str


class ProgressSlot:
    """The latest progress report of one child process, shared with its supervisor.

    Made by the supervisor before it starts the child, and handed to it as an argument."""

    def __init__(self, context: Any, log_bytes: int = 64 * 1024) -> None:  # a multiprocessing context
        from jobs.try_log import LiveSlot

        # The running try's log so far, which the writer writes with the progress.
        self.log = LiveSlot(context, log_bytes)
        self._lock = context.Lock()
        self._numbers = context.RawArray("q", 5)  # sequence, job id, attempt, percent, length
        self._text = context.RawArray("c", MESSAGE_BYTES)

    def put(self, job_id: int, attempt: int, percent: int, message: str) -> None:
        """In the child: replace the slot's report. The message is made storable here (no
        NUL, lone surrogates replaced), so the supervisor's write cannot fail on it."""
        data = message.replace("\x00", "")[:MESSAGE_CHARS].encode("utf-8", "replace")
        with self._lock:
            numbers = self._numbers
            numbers[_JOB], numbers[_ATTEMPT], numbers[_PERCENT] = job_id, attempt, percent
            numbers[_LENGTH] = len(data)
            self._text[: len(data)] = data
            numbers[_SEQUENCE] += 1

    @property
    def sequence(self) -> int:
        """How many reports the slot has taken (read without the lock: one aligned word)."""
        return self._numbers[_SEQUENCE]

    def read(self) -> tuple[int, Report]:
        """In the supervisor: the latest report and its sequence number."""
        with self._lock:
            sequence, job_id, attempt, percent, length = self._numbers[:]
            message = bytes(self._text[:length]).decode("utf-8", "replace")
        return sequence, Report(job_id, attempt, percent, message)


class Reporting(Protocol):
    """What the writer needs of a child: its slot, and the last sequence written from it."""

    progress: ProgressSlot
    progress_written: int


class ProgressWriter:
    """Writes the children's new reports to their jobs' rows, at most once per interval."""

    def __init__(
        self,
        worker: str,
        guard: DatabaseGuard,
        interval: float,
        *,
        write: Callable[[str, int, int, int, str], object] | None = None,
        write_log: Callable[[int, int, str], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if write is None:
            from jobs.store import set_progress  # the store needs the models: loaded late

            write = set_progress
        if write_log is None:
            from jobs.store import save_live_log

            write_log = save_live_log
        self._write_log = write_log
        self.worker = worker
        self._guard = guard
        self._interval = interval
        self._write = write
        self._clock = clock
        self.next_write = 0.0

    def deadline(self) -> float:
        return self.next_write

    def write_due(self, children: Iterable[Reporting]) -> None:
        """Write every changed slot, if the interval since the last round has passed."""
        now = self._clock()
        if now < self.next_write:
            return
        self.next_write = now + self._interval
        for child in children:
            self.write(child)

    def write_log(self, child: Reporting) -> None:
        """Write the running try's log so far, if it grew since the last write (also for a
        child that died or was killed: the lines before its end)."""
        log = child.progress.log
        if log.sequence != log.written:
            sequence, job_id, attempt, text = log.read()
            if job_id and self._guard.call(self._write_log, job_id, attempt, text) is not None:
                log.written = sequence

    def write(self, child: Reporting) -> None:
        """Write the child's latest report now, if it has one not written yet (its job just
        ended, say), and the running try's log if it grew. During a database outage they
        stay for the next round."""
        self.write_log(child)
        if child.progress.sequence == child.progress_written:
            return
        sequence, report = child.progress.read()
        if self._guard.call(self._write, self.worker, *report) is not None:
            child.progress_written = sequence
