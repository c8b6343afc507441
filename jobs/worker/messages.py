"""What the supervisor and a child process tell each other, as small typed records.

Supervisor → child, over the pipe: ``RunBatch`` (jobs to run in order, one at a time) or
``Stop`` (exit; only ever sent between batches).

Child → supervisor, over the pipe: ``JobEnded`` as soon as a job of the batch has an
outcome the supervisor must hear of (``jobs.worker.outcome``: it failed, it was postponed
by ``RetryLater``, an atomic job settled its own transaction, or a django.tasks task
succeeded with a result to store), and ``BatchDone`` once every job of the batch has run.
A plain job that succeeded sends nothing of its own: ``BatchDone`` covers it. Progress
goes through shared memory instead (``jobs.worker.progress``).

Child → supervisor, without a message: before each job the child writes the job's index in
the batch and its start into a shared array (``SharedState``, at ``CURRENT`` and
``STARTED``). After a crash or a timeout the supervisor reads there which job was hit,
which ones finished before it and which never started.

On the pipe the records travel as bare tuples and ``None``: pickling an instance of a
class looks the class up by name on both sides, several microseconds a message, which the
hot path would pay on every batch (and, for jobs sent as ``ClaimedJob``, on every job).
``JobEnded`` travels as its position, its outcome's kind as a number and the outcome's
other fields; ``send`` and the two ``receive_*`` functions are the only code that knows
that shape. They pickle with ``pickle`` itself rather than through ``Connection.send``,
whose ``ForkingPickler`` copies the whole reducer table for every message (some 35 µs of
a wake-up's hand-over, cold): these records need none of multiprocessing's reducers.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import NamedTuple, Protocol

from jobs.drivers.protocol import TryFields
from jobs.worker.outcome import Kind, Outcome

# The fields of ``jobs.store.ClaimedJob``: id, type, payload (JSON text), attempt, max
# attempts, queue, workflow step (or None), held, what its try reads of its row if the
# claim brought it (``ClaimedJob.try_fields``, or None).
JobFields = tuple[int, str, str, int, int, str, int | None, bool, TryFields | None]

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


class JobEnded(NamedTuple):
    """The job at ``position`` in the current batch came to ``outcome``; the batch goes on."""

    position: int  # not "index": a tuple's method
    outcome: Outcome


class BatchDone(NamedTuple):
    """Every job of the current batch has run."""


ToChild = RunBatch | Stop
FromChild = JobEnded | BatchDone

STOP = Stop()
BATCH_DONE = BatchDone()


def send(conn: Connection, message: ToChild | FromChild) -> None:
    """Send a record in its wire shape (raises OSError when the other side is gone)."""
    conn.send_bytes(pickle.dumps(_wire(message), pickle.HIGHEST_PROTOCOL))


def _wire(message: ToChild | FromChild) -> object:
    if isinstance(message, RunBatch):
        return [tuple(job) for job in message.jobs]  # plain tuples: see the module docstring
    if isinstance(message, JobEnded):
        outcome = message.outcome
        return (message.position, outcome.kind.value, *outcome[1:])  # the kind as a bare int
    return None  # Stop, or BatchDone: each direction has one record without content


def receive_in_child(conn: Connection) -> ToChild:
    """The supervisor's next record (blocks; EOFError when the supervisor is gone)."""
    wire = pickle.loads(conn.recv_bytes())
    return STOP if wire is None else RunBatch(wire)


def receive_in_supervisor(conn: Connection) -> FromChild:
    """A child's next record (blocks; EOFError when the child is gone)."""
    wire = pickle.loads(conn.recv_bytes())
    return BATCH_DONE if wire is None else JobEnded(wire[0], Outcome(Kind(wire[1]), *wire[2:]))
