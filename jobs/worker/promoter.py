"""When a worker promotes the jobs due later (``jobs.store.promote_due``).

A job queued for a later time (a delayed enqueue, a retry's backoff, ``RetryLater``) waits
outside the claims' range until a worker promotes it. Every worker promotes: on each poll
(``JOBS_POLL_INTERVAL``), and at the moment the next job due later is due, which each
promotion returns (by the database's clock, as seconds from now, so a skew between this
host's clock and the database's moves nothing). So a retry whose backoff ends starts about
when it ends, as it did when claims read every queued job, and never a poll later. A full
batch means more are due: the next promotion follows at once, between claims. Workers
that promote at the same moment split the rows (SKIP LOCKED); the promoted queues' idle
workers wake on the notice where the database notifies, the others at their next poll.
"""

from __future__ import annotations

from jobs import store
from jobs.worker.guard import DatabaseGuard

# Jobs coming due one after another (say a million reminders spread over the day) would
# wake the worker for each one: at most one promotion per this many seconds, so a job
# starts at most this late.
MIN_GAP = 0.05


class Promoter:
    def __init__(self, poll_interval: float) -> None:
        self.poll_interval = poll_interval
        self.next_at = 0.0  # time.monotonic(): the first promotion comes at start
        self.last_at = float("-inf")

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def deadline(self) -> float:
        return self.next_at

    def soon(self) -> None:
        """Promote on the loop's next turn (no sooner than MIN_GAP after the last one): a
        retry or a postponed job was just queued for later, and its time is to be learned
        (or a burst worker takes its last look)."""
        self.next_at = min(self.next_at, self.last_at + MIN_GAP)

    def promote(self, db: DatabaseGuard, now: float) -> set[str]:
        """Promote what is due; the queues that got claimable jobs."""
        self.last_at = now
        promoted = db.call(store.promote_due)
        if promoted is None:  # the database is away: the guard says when to try again
            return set()
        if promoted.promoted >= store.PROMOTE_BATCH:
            self.next_at = now  # more may be due
        else:
            self.next_at = now + self.poll_interval
            if promoted.next_due_in is not None:
                self.next_at = min(self.next_at, now + max(promoted.next_due_in, MIN_GAP))
        return set(promoted.queues)
