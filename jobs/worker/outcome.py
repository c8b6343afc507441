"""What one try of a job came to, as the child tells the supervisor: one named type.

    succeeded   the handler returned; ``result`` is a django.tasks task's return value as
                JSON text (None for a job: the end of the batch acknowledges it)
    failed      it raised; ``failure`` is what the store records (``jobs.retries`` decides
                whether another try follows)
    postponed   it raised ``RetryLater``: not a failure; it runs again at ``at``, its
                attempt given back, ``reason`` its message
    settled     an atomic job wrote its own outcome in its handler's transaction:
                ``committed`` (its writes and its completion), or rolled back because the
                job was no longer this try's; nothing is left to write

Any of them may carry ``log``: what the handler logged during the try (``jobs.try_log``),
None when it logged nothing, which keeps a quiet job's success a message-less one.

The supervisor dispatches on ``kind``; ``jobs.worker.messages`` carries it over the pipe.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from jobs.store import Failure
    from jobs.try_log import Log


class Kind(enum.IntEnum):
    SUCCEEDED = 0
    FAILED = 1
    POSTPONED = 2
    SETTLED = 3


class Outcome(NamedTuple):
    kind: Kind
    result: str | None = None
    failure: Failure | None = None
    at: datetime | None = None
    reason: str = ""
    committed: bool = False
    log: Log | None = None

    @classmethod
    def succeeded(cls, result: str | None = None) -> Outcome:
        return cls(Kind.SUCCEEDED, result=result)

    @classmethod
    def failed(cls, failure: Failure) -> Outcome:
        return cls(Kind.FAILED, failure=failure)

    @classmethod
    def postponed(cls, at: datetime, reason: str) -> Outcome:
        return cls(Kind.POSTPONED, at=at, reason=reason)

    @classmethod
    def settled(cls, committed: bool) -> Outcome:
        return cls(Kind.SETTLED, committed=committed)


SUCCEEDED = Outcome.succeeded()  # a job's success: no result, nothing to send
