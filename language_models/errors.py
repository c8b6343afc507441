"""The model errors, one family for every caller (the pipeline's classifier and the
workspace jobs). ``ModelError`` is the root; a failed call that another try may fix is a
``ModelCallError`` (retryable), a call the provider refuses for good is ``ModelRejected``.

Messages name the provider and the setting to check, never a key or a prompt.
"""

from __future__ import annotations

from jobs import JobError, PermanentError, RetryableError, RetryLater


class ModelError(JobError):
    """The model call failed."""


class ModelCallError(ModelError, RetryableError):
    """The model call failed: a timeout, an unreachable service, or an answer that is not the agreed JSON."""


class ModelTimeout(ModelCallError):
    """The model did not answer within MODEL_TIMEOUT."""


class ModelUnavailable(ModelCallError):
    """The model service could not be reached or answered with a server error."""


class InvalidAnswer(ModelCallError):
    """The model's answer is not what was asked for (not the JSON asked for, empty, or too long)."""


class ModelRateLimited(ModelCallError, RetryLater):
    """The model service asked us to slow down (HTTP 429): the job waits for it and runs
    again then, without using an attempt (a ``jobs.RetryLater``)."""

    #: Seconds to wait when the service does not say (no Retry-After).
    DEFAULT_WAIT = 30.0

    def __init__(self, message: str | None = None, *, retry_after: float | None = None) -> None:
        # Seconds the service asked us to wait (its Retry-After), when it said.
        self.retry_after = retry_after
        wait = retry_after if retry_after is not None else self.DEFAULT_WAIT
        RetryLater.__init__(self, message or "The model service asked us to slow down.", delay=wait)


class ModelRejected(ModelError, PermanentError):
    """The model service refused the request for good (bad credentials, unknown model, invalid request)."""


def rate_limited(provider: str, detail: str, retry_after: float | None) -> ModelError:
    """What a provider's "slow down" (HTTP 429, Bedrock's ThrottlingException) raises.

    The one place that decides what a rate limit does to a job: ``ModelRateLimited`` is a
    ``jobs.RetryLater``, so the job goes back to the queue for when the service allows
    (``retry_after``, or ``ModelRateLimited.DEFAULT_WAIT``) without using an attempt, as the
    platform's HTTP convention has it for every provider.
    """
    wait = f" (the service asked for {retry_after:g}s)" if retry_after is not None else ""
    return ModelRateLimited(
        f"The {provider} model service is rate limiting calls{wait}: {detail}.", retry_after=retry_after
    )
