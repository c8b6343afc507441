"""The pipeline's exceptions. ``PipelineError`` is the root; each subclasses the engine's
retryable or permanent error so the job engine knows whether another try can help. The
model errors are also of the platform's model-error family (``language_models``)."""

import language_models
from jobs import JobError, PermanentError, RetryableError


class PipelineError(JobError):
    """The email pipeline failed."""


class EmailMissing(PipelineError, PermanentError):
    """The email row does not exist (deleted, or never committed)."""


class ModelCallError(PipelineError, language_models.ModelCallError):
    """The model call failed: a timeout, an unreachable service, or an answer that is not the agreed JSON."""


class ModelRateLimited(ModelCallError, language_models.ModelRateLimited):
    """The model service asked us to slow down (HTTP 429)."""


class IndexingError(PipelineError, RetryableError):
    """The search index could not be reached."""


class VectorIndexUnavailable(IndexingError):
    """Qdrant or the embedding service could not be reached, timed out or failed (5xx): the
    email is partially indexed, and the catch-up completes it once the service answers."""

    def __init__(self, message: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        # Seconds the service asked us to wait (a 429's Retry-After), when it said.
        self.retry_after = retry_after


class IndexRefused(PipelineError, PermanentError):
    """The embedding service or Qdrant refused the request for good (a bad model name, an
    input it refuses, refused credentials): another try would fail the same way."""


class UnreadableEmail(PipelineError, ValueError):
    """The input is not an email at all (empty, or could not be read)."""


class EmailTooLarge(UnreadableEmail):
    """The email is larger than PIPELINE_MAX_EMAIL_BYTES."""


class UnprocessableEmail(PipelineError, PermanentError):
    """The email cannot be processed as it is (nested too deep, too many parts, or its
    structure breaks the parser): another try would fail the same way."""
