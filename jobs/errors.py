"""The engine's exceptions: what a handler raises to steer retries, and what callers get
when they ask the engine for something it refuses."""


class JobError(Exception):
    """A background job failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class RetryableError(JobError):
    """A transient failure; the job is tried again after its backoff."""


class PermanentError(JobError):
    """A failure that another try cannot fix; the job fails at once, without retries."""


class JobTimeout(RetryableError):
    """The job ran longer than its type's timeout and was stopped."""


class WorkerCrashed(RetryableError):
    """The child process running the job died."""


class UnknownJobType(JobError, LookupError):
    """No job type is registered under this name."""


class InvalidPayload(JobError, ValueError):
    """The payload is not a JSON object of JSON-safe values."""


class InvalidJobOption(JobError, ValueError):
    """An option of enqueue (priority, run_at, dedupe key) is not one the engine accepts."""


class InvalidTransition(JobError):
    """The job is not in a state that allows this action."""
