"""The engine's exceptions: what a handler raises to steer retries, and what callers get
when they ask the engine for something it refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# A delay past this (about 3,000 years) would leave the range of a datetime.
MAX_DELAY_SECONDS = 1e11


class JobError(Exception):
    """A background job failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class RetryableError(JobError):
    """A transient failure; the job is tried again after its backoff."""


class PermanentError(JobError):
    """A failure that another try cannot fix; the job fails at once, without retries."""


class RetryLater(JobError):
    """Not a failure: the job cannot go on before a given time (a rate limit, a host asking
    to wait). It goes back to the queue to run at ``at`` (or after ``delay`` seconds)
    without using an attempt; ``reason`` is shown as the job's message.

    ``raise jobs.RetryLater(at=reset, reason="GitHub rate limit for acme/api")``

    However far ahead ``at`` lies, the engine queues the job no later than
    ``JOBS_MAX_RETRY_LATER_SECONDS`` from the moment it reschedules it.
    """

    def __init__(self, reason: str = "", *, at: datetime | None = None, delay: float | None = None) -> None:
        if (at is None) == (delay is None):
            raise ValueError("RetryLater takes either at= or delay=.")
        if at is None:
            # Any number a host sent (3e9, inf, nan) stays a datetime; the engine caps it.
            seconds = float(delay or 0)
            seconds = min(seconds, MAX_DELAY_SECONDS) if seconds > 0 else 0.0
            at = datetime.now(UTC) + timedelta(seconds=seconds)
        elif at.tzinfo is None:
            raise ValueError("RetryLater(at=...) needs an aware datetime.")
        self.at = at
        self.reason = reason or "Waiting for a rate limit."
        super().__init__(self.reason)


class TimerStepFailed(RetryableError):
    """A step of the timer's run failed (the other steps still ran)."""


class JobTimeout(RetryableError):
    """The job ran longer than its type's timeout and was stopped."""


class WorkerCrashed(RetryableError):
    """The child process running the job died."""


class WorkerLost(RetryableError):
    """The worker running the job stopped answering; the reaper took the job back."""


class UnknownJobType(JobError, LookupError):
    """No job type is registered under this name."""


class InvalidPayload(JobError, ValueError):
    """The payload is not a JSON object of JSON-safe values."""


class InvalidJobOption(JobError, ValueError):
    """An option of enqueue (priority, run_at, dedupe key) is not one the engine accepts."""


class InvalidTransition(JobError):
    """The job is not in a state that allows this action."""


def permanent(exc: BaseException) -> BaseException:
    """Mark ``exc`` as one another try cannot fix, without changing its class: an adapter
    records the exception its framework expects (``jobs.retries`` reads the mark)."""
    exc._jobs_permanent = True  # type: ignore[attr-defined]
    return exc


class FencedOff(JobError):
    """This try no longer holds the job (the reaper took it back): its result is not written."""


# --- django.tasks tasks (jobs.backends) --------------------------------------------------


class InvalidTaskArguments(PermanentError, TypeError):
    """The task's arguments do not fit its function's signature."""


class InvalidReturnValue(PermanentError, TypeError):
    """The task returned a value that is not JSON-serialisable, so it cannot be stored.

    What results recorded before such a failure was recorded as the serializer's
    ``TypeError`` (as Django's own backends record it); kept so that they still read."""


class TaskCancelled(JobError):
    """The task was cancelled before it ran."""
