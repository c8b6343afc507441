"""Where a worker's last plain claim of some queues stopped, so that its next claim on
MariaDB reads on from there for a short while instead of from the head of the claim index.

InnoDB keeps a claimed job's old entry in the claim index, delete-marked, until purge
removes it, and a locking read steps over every such entry it meets. During a steady
drain purge lags behind the claims, and those entries pile up exactly where each claim
starts: the head of its range. Reading on from the last claim's end passes over them.
PostgreSQL needs none of this: an index scan marks the dead entries it meets, and the
scans after it skip them.

What it costs: a job that becomes due ahead of a worker's position (a more urgent
priority, or an earlier due time than the jobs being drained, such as a retry promoted
late) is not seen by that worker's claims from the position; the worker reads from the
head again once its position is READ_ON_FOR old, or at once when a read from the position
comes back short. No job is passed over for longer than that. Only a full claim of at
least SMALLEST_CLAIM jobs leaves a position: a backlog of short jobs, where purge lags;
claims of a few jobs (long jobs, ``jobs.testing.drain``'s one at a time) keep strict claim
order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

#: How long (seconds) a worker's claims read on from where its last one stopped before one
#: reads from the head of the index again: a job ahead of the position waits at most this
#: much longer than strict claim order would have it wait.
READ_ON_FOR = 0.25
#: The fewest jobs a full claim takes to leave a position to read on from.
SMALLEST_CLAIM = 16
#: Positions kept at most (one per set of queues a lane claims at once).
POSITIONS_KEPT = 64


class Position(NamedTuple):
    """A job's place in claim order: its priority, due time and id."""

    priority: int
    run_at: datetime
    id: int

    def params(self) -> list[object]:
        """The parameters of a comparison of (priority, run_at, id) with this place, as
        ``priority > %s OR (priority = %s AND (run_at > %s OR (run_at = %s AND id > %s)))``
        writes it (MariaDB reads that as ranges of the index; a row comparison it does not)."""
        return [self.priority, self.priority, self.run_at, self.run_at, self.id]


class _Kept(NamedTuple):
    position: Position
    head_read_at: float  # when a claim of these queues last read from the head


class ReadPositions:
    """The positions of one worker's plain claims, by the queues each claim read."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._kept: dict[tuple[str, ...], _Kept] = {}

    def position(self, queues: Sequence[str]) -> Position | None:
        """Where the next claim of ``queues`` reads on from; None: from the head."""
        kept = self._kept.get(tuple(queues))
        if kept is None or self._clock() - kept.head_read_at >= READ_ON_FOR:
            return None
        return kept.position

    def claimed(
        self, queues: Sequence[str], asked: int, taken: Sequence[Position], *, from_head: bool
    ) -> None:
        """A claim of ``queues`` asked for ``asked`` jobs and took those at ``taken``;
        ``from_head``: it read from the head. A full claim of at least SMALLEST_CLAIM keeps
        where it ended; any other drops the position (nothing is left to read on to, or the
        claims are too small to gain from it)."""
        key = tuple(queues)
        kept = self._kept.pop(key, None)
        if asked < SMALLEST_CLAIM or len(taken) < asked:
            return
        now = self._clock()
        self._kept[key] = _Kept(max(taken), now if from_head or kept is None else kept.head_read_at)
        if len(self._kept) > POSITIONS_KEPT:
            for stale in [k for k, v in self._kept.items() if now - v.head_read_at >= READ_ON_FOR]:
                del self._kept[stale]
            while len(self._kept) > POSITIONS_KEPT:
                del self._kept[next(iter(self._kept))]
