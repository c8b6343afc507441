"""The workspace jobs' errors. Permanent ones fail a job at once; retryable ones back off."""

from jobs import JobError, PermanentError, RetryableError


class WorkspaceError(JobError):
    """A workspace job failed."""


class MissingRecord(WorkspaceError, PermanentError):
    """The row this job is about no longer exists."""


class NotReady(WorkspaceError, PermanentError):
    """The record is not in a state this job can work on."""


class RepositoryUnreadable(WorkspaceError, PermanentError):
    """The repository has neither a readable local path nor stored files."""


class UnknownWorkflow(WorkspaceError, PermanentError):
    """No AI workflow is registered under this name."""


class ProviderNotConfigured(WorkspaceError, PermanentError):
    """No provider client is configured for this kind of connection."""


class ProviderUnavailable(WorkspaceError, RetryableError):
    """The provider could not be reached; the sync is tried again later."""


class RepositoryFetchFailed(WorkspaceError, RetryableError):
    """git could not fetch the repository (unreachable, or it timed out); tried again later."""


class RepositoryRefused(WorkspaceError, PermanentError):
    """The repository cannot be fetched as given: a bad URL, no such repository, or access denied."""


class RepositoryTooLarge(WorkspaceError, PermanentError):
    """The repository is over a limit of what git may write, list, print or take in memory
    (REPOSITORY_MAX_BYTES, REPOSITORY_MAX_ENTRIES, GIT_MAX_OUTPUT_BYTES, GIT_MAX_MEMORY_BYTES)."""


class ProviderRefused(WorkspaceError, PermanentError):
    """The provider refused the request (401/403: the credentials; another 4xx: the request
    itself); another try cannot fix that."""


class ProviderAnswerInvalid(WorkspaceError, RetryableError):
    """The provider's answer was not what its API documents (malformed JSON, too large)."""
