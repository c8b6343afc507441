"""Whether a try that did not succeed is followed by another, and after how long: the one
rule the store (a failed try, a try lost with its worker), the worker's log and the
django.tasks adapter (the status its ``task_finished`` signal reports) all ask.

- A try that raised ``RetryLater`` is postponed, not failed: its attempt is given back and
  it runs again when it asked to, whatever its budget.
- A permanent error (``PermanentError``, an unknown type, a payload that does not fit the
  handler's keywords, an exception marked with ``jobs.errors.permanent``) is never retried.
- Any other failure, or a try lost with its worker, is retried while the budget lasts,
  after its type's backoff (``JobType.delay_after``).
"""

from __future__ import annotations

from datetime import timedelta

from jobs import registry
from jobs.errors import PermanentError, RetryLater, UnknownJobType


def retryable(exc: BaseException) -> bool:
    """May a try that raised ``exc`` (being handled now) be worth another one?"""
    if isinstance(exc, PermanentError | UnknownJobType) or getattr(exc, "_jobs_permanent", False):
        return False
    if isinstance(exc, TypeError):
        # Raised by the handler's call itself (no deeper frame): the payload does not fit
        # the handler's keywords, and will not fit next time either.
        return exc.__traceback__ is not None and exc.__traceback__.tb_next is not None
    return True


def retried(attempt: int, max_attempts: int, *, retryable: bool = True) -> bool:
    """Does another try follow try number ``attempt`` (1-based) of ``max_attempts`` that
    failed (``retryable``: not permanently) or was lost with its worker?"""
    return retryable and attempt < max_attempts


def follows(exc: BaseException, attempt: int, max_attempts: int) -> bool:
    """Does another try follow this one, which raised ``exc``? (``RetryLater``: always.)"""
    if isinstance(exc, RetryLater):
        return True
    return retried(attempt, max_attempts, retryable=retryable(exc))


def backoff(type_name: str, attempt: int) -> timedelta:
    """How long a job waits after its try number ``attempt`` failed or was lost: its type's
    schedule, for a declared type and a django.tasks task alike. None for a type that is
    not known (any more): its next claim fails it for good, saying why."""
    try:
        return timedelta(seconds=registry.lookup(type_name).delay_after(attempt))
    except UnknownJobType:
        return timedelta(0)
