"""What the supervisor and a child process tell each other, as small typed records.

Supervisor → child, over the pipe: ``RunBatch`` (jobs to run in order, one at a time) or
``Stop`` (exit; only ever sent between batches).

Child → supervisor, over the pipe: ``JobFailed`` as soon as a job of the batch fails,
``JobReturned`` as soon as a job that returns a result (a django.tasks task) succeeds,
``JobRescheduled`` as soon as one asks to run again later (``jobs.RetryLater``: not a
failure, no attempt used), ``JobSettled`` as soon as an atomic job's transaction has ended
(committed with the job's completion in it, or rolled back because the fence refused that
completion: either way the supervisor has nothing left to write for it), and ``BatchDone``
once every job of the batch has run (failed, rescheduled and settled ones included).
Progress goes through shared memory instead (``jobs.worker.progress``). A plain job without a result sends nothing of its own: ``BatchDone`` covers it.

Child → supervisor, without a message: before each job the child writes the job's index in
the batch and its start into a shared array (``SharedState``, at ``CURRENT`` and
``STARTED``). After a crash or a timeout the supervisor reads there which job was hit,
which ones finished before it and which never started.

On the pipe the records travel as bare tuples and ``None``: pickling an instance of a
class looks the class up by name on both sides, several microseconds a message, which the
hot path would pay on every batch (and, for jobs sent as ``ClaimedJob``, on every job).
A record with content travels as its fields behind a small number naming its kind
(``_TAGGED``); ``send`` and the two ``receive_*`` functions are the only code that knows
that shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from jobs.store import Failure

# The fields of ``jobs.store.ClaimedJob``: id, type, payload (JSON text), attempt, max
# attempts, queue.
JobFields = tuple[int, str, str, int, int, str]

# Positions in the shared state array.
CURRENT = 0  # index in the batch of the job running now
STARTED = 1  # its start, in time.monotonic() seconds (a system-wide clock)


class SharedState(Protocol):
    """The shared array of two floats (``multiprocessing.RawArray("d", 2)``)."""

    def __getitem__(self, index: int, /) -> float: ...

    def __setitem__(self, index: int, value: float, /) -> None: ...


class RunBatch(NamedTuple):
    """Run these jobs in order, one at a time."""

    jobs: Sequence[JobFields]


class Stop(NamedTuple):
    """Exit: the supervisor is shutting down."""


class JobFailed(NamedTuple):
    """The job at ``position`` in the current batch failed; the batch goes on."""

    position: int  # not "index": a tuple's method
    failure: Failure


class JobRescheduled(NamedTuple):
    """The job at ``position`` raised ``RetryLater``: back to the queue for ``at``, its
    attempt given back; the batch goes on."""

    position: int
    at: datetime
    reason: str


class JobSettled(NamedTuple):
    """The atomic job at ``position`` wrote its own outcome in its handler's transaction:
    ``committed`` (its writes and its completion), or rolled back because the job was no
    longer this try's (the fence refused the completion). Nothing is left to acknowledge."""

    position: int
    committed: bool


class JobReturned(NamedTuple):
    """The job at ``position`` in the current batch succeeded and returned ``value`` (JSON
    text), which the supervisor stores with it."""

    position: int
    value: str


class BatchDone(NamedTuple):
    """Every job of the current batch has run."""


ToChild = RunBatch | Stop
FromChild = JobFailed | JobReturned | JobRescheduled | JobSettled | BatchDone

# The records with content, by the number that names each on the wire.
_TAGGED: tuple[type[JobFailed | JobReturned | JobRescheduled | JobSettled], ...] = (
    JobFailed,
    JobReturned,
    JobRescheduled,
    JobSettled,
)

STOP = Stop()
BATCH_DONE = BatchDone()


def send(conn: Connection, message: ToChild | FromChild) -> None:
    """Send a record in its wire shape (raises OSError when the other side is gone)."""
    conn.send(_wire(message))


def _wire(message: ToChild | FromChild) -> object:
    if isinstance(message, RunBatch):
        return [tuple(job) for job in message.jobs]  # plain tuples: see the module docstring
    if isinstance(message, _TAGGED):
        return (_TAGGED.index(type(message)), *message)
    return None  # Stop, or BatchDone: each direction has one record without content


def receive_in_child(conn: Connection) -> ToChild:
    """The supervisor's next record (blocks; EOFError when the supervisor is gone)."""
    wire = conn.recv()
    return STOP if wire is None else RunBatch(wire)


def receive_in_supervisor(conn: Connection) -> FromChild:
    """A child's next record (blocks; EOFError when the child is gone)."""
    wire = conn.recv()
    return BATCH_DONE if wire is None else _TAGGED[wire[0]](*wire[1:])
