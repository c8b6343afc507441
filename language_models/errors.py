"""The model errors, one family for every caller (the pipeline's classifier and the
workspace jobs). ``ModelError`` is the root; a failed call that another try may fix is a
``ModelCallError`` (retryable), a call the provider refuses for good is ``ModelRejected``.

Messages name the provider and the setting to check, never a key or a prompt.
"""

from __future__ import annotations

from jobs import JobError, PermanentError, RetryableError


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


class ModelRateLimited(ModelCallError):
    """The model service asked us to slow down (HTTP 429)."""

    def __init__(self, message: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        # Seconds the service asked us to wait (its Retry-After), when it said.
        self.retry_after = retry_after


class ModelRejected(ModelError, PermanentError):
    """The model service refused the request for good (bad credentials, unknown model, invalid request)."""


def rate_limited(provider: str, detail: str, retry_after: float | None) -> ModelError:
    """What a provider's "slow down" (HTTP 429, Bedrock's ThrottlingException) raises.

    The one place that decides what a rate limit does to a job: today a retryable
    ``ModelRateLimited``, which costs an attempt and waits out the type's backoff. Once the
    engine can put a job back at a given time without using an attempt (``jobs.RetryLater``),
    this is where a rate limit switches to it, with ``retry_after`` as the delay.
    """
    wait = f" (the service asked for {retry_after:g}s)" if retry_after is not None else ""
    return ModelRateLimited(
        f"The {provider} model service is rate limiting calls{wait}: {detail}.", retry_after=retry_after
    )
