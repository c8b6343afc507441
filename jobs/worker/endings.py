"""How each try of a child's batch ends, for the supervisor: the child's messages read
into outcomes (``jobs.worker.outcome``), each outcome handed to the result buffer
(``jobs.worker.results``; an atomic job wrote its own), the one log line of a try's end,
and the batch of a child that died or was stopped settled job by job.
"""

from __future__ import annotations

import contextlib
import logging
import time

from jobs import retries
from jobs.store import ClaimedJob, Failure
from jobs.worker.messages import JobEnded
from jobs.worker.outcome import SUCCEEDED, Kind, Outcome
from jobs.worker.pool import Child
from jobs.worker.progress import ProgressWriter
from jobs.worker.results import ResultBuffer

logger = logging.getLogger("jobs.worker")


class Endings:
    def __init__(self, results: ResultBuffer, progress: ProgressWriter) -> None:
        self.results = results
        self.progress = progress
        self.log_jobs = logger.isEnabledFor(logging.INFO)

    def collect(self, child: Child) -> bool:
        """Read one message from a child; False when its pipe is closed (it died)."""
        try:
            message = child.receive()
        except (EOFError, OSError):
            return False
        self.progress.write(child)  # a job ended: its last report, before its result
        if isinstance(message, JobEnded):
            position, outcome = message
            if outcome.kind is Kind.SUCCEEDED:
                child.returned[position] = outcome  # acknowledged with the batch
            else:
                child.settled.add(position)
                took = time.monotonic() - child.started
                child.lane.note(child.batch[position], took)
                self.ended(child.batch[position], outcome, took)
            return True
        returned = child.returned
        batch, settled, took = child.finish()
        child.lane.observe(took, batch, first=child.batches_done == 1)
        for index, job in enumerate(batch):
            if index not in settled:
                self.ended(job, returned.get(index, SUCCEEDED), took / len(batch))
        return True

    def read_pending(self, child: Child) -> None:
        """Read what a child said before it died or was killed (failures, results of the
        jobs it finished, atomic jobs it settled, or the end of its batch), so that settling
        its batch counts neither a failed or settled job as done nor a task's result as lost."""
        with contextlib.suppress(EOFError, OSError):
            while child.busy and child.conn.poll() and self.collect(child):
                pass

    def salvage(
        self, child: Child, *, failure: Failure | None = None, how: str = "", release_message: str = ""
    ) -> None:
        """Settle a batch whose child was killed or died: jobs before the one it was running
        finished; that one failed (or, at shutdown, goes back without using an attempt);
        jobs after it never started and go back as they were."""
        self.progress.write_log(child)  # what the try it was running logged before its end
        index, culprit, started = child.current()
        returned = child.returned
        batch, settled, _ = child.finish()
        for position, job in enumerate(batch):
            if position < index and position not in settled:
                self.ended(job, returned.get(position, SUCCEEDED), 0.0)
            elif position > index:
                self.results.release(job)
        if index in settled:
            return
        took = time.monotonic() - started
        child.lane.note(culprit, took)  # a crash or a timeout: as long as it ran
        if failure is not None:
            self.ended(culprit, Outcome.failed(failure), took, how)
        else:
            self.results.release(culprit, release_message)
            self._log(logging.WARNING, culprit, took, "cut off at shutdown, requeued")

    def ended(self, job: ClaimedJob, outcome: Outcome, took: float, how: str = "failed") -> None:
        """Hand a try's outcome to the result buffer and log its end; ``how`` a failure
        came about (failed, crashed, timed out)."""
        level = logging.INFO
        if outcome.log is not None:
            self.results.log(job, outcome.log)
        if outcome.kind is Kind.SUCCEEDED:
            self.results.ack(job, outcome.result)
            said = "succeeded"
        elif outcome.kind is Kind.FAILED:
            assert outcome.failure is not None
            self.results.fail(job, outcome.failure)
            retried = retries.retried(job.attempt, job.max_attempts, retryable=outcome.failure.retryable)
            level = logging.WARNING
            said = f"{how}, {'to be retried' if retried else 'for good'}: {outcome.failure.text}"
        elif outcome.kind is Kind.POSTPONED:
            assert outcome.at is not None
            self.results.reschedule(job, outcome.at, outcome.reason)
            said = f"rescheduled for {outcome.at:%Y-%m-%d %H:%M:%S}: {outcome.reason}"
        elif outcome.committed:  # an atomic job or a workflow step: it wrote its own outcome
            self.results.settled(job)
            said = "succeeded (committed in its own transaction)"
        else:
            level = logging.WARNING
            said = (
                "rolled back: the job was no longer this worker's (taken back by the reaper), "
                "so its writes were not committed"
            )
        self._log(level, job, took, said)

    def _log(self, level: int, job: ClaimedJob, took: float, said: str) -> None:
        """The one line of a try's end (its start is the supervisor's)."""
        if level > logging.INFO or self.log_jobs:
            logger.log(
                level, "end %s #%d attempt %d/%d %.1fms %s",
                job.type, job.id, job.attempt, job.max_attempts, took * 1000, said,
            )  # fmt: skip
