"""A lane's claim: which of its queues the supervisor asks the database for, and how.

Queues with flow limits (``jobs.worker.flow``) are claimed first, through flow control;
the others by the store's one-statement claim; a queue that holds limited types beside
plain ones by both (its plain jobs through the claim that passes over keyed ones). Every
call goes through the supervisor's ``DatabaseGuard``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from jobs import store, tracing
from jobs.store import ClaimedJob
from jobs.worker.flow import Claimed, FlowControl
from jobs.worker.guard import DatabaseGuard
from jobs.worker.pool import Lane


def claim_into(
    lane: Lane,
    size: int,
    *,
    worker: str,
    db: DatabaseGuard,
    flow: FlowControl,
    window: float,
    max_prefetch: int,
    with_rows: Sequence[str] = (),
) -> int:
    """Claim what the lane's idle children can take. With a fair share, a queue at its
    share is left out, and a claim takes no more of a queue than its share has room
    for, so filling the idle children may take a claim or two more. How many it claimed
    into the lane's buffer (none when the database could not be reached).

    Paused queues are left out; queues with flow limits (``jobs.worker.flow``) are
    claimed first, through flow control, the others by the one-statement claim, which
    brings what the tries of the ``with_rows`` types read of their rows."""
    total = 0
    want = lane.claim_size(window, max_prefetch)
    while want > 0:
        queues, limit = lane.claimable(want, size, max_prefetch)
        if not queues:
            return total
        split = flow.split(queues)
        lane.claimed_short(split.out)  # paused, or at a limit of their own: until a wake-up
        got = 0
        # Jobs with limits first (a claim of them is throttled), then the others; of those
        # in mixed queues, first the ones this worker holds a lease of, by the plain claim.
        keyed = [queue for queue in split.mixed if queue not in flow.no_keyed]
        for held in flow.usable_leases() if keyed else ():
            if got >= limit:
                break
            leased = _into(lane, db, worker, flow.claim_leased, worker, keyed, held, limit - got, with_rows)
            if leased is None:
                return total
            got += len(leased)
            total += len(leased)
        for group, keyed_only in ((split.limited, False), (keyed, True)):
            if not group or got >= limit:
                continue
            # Jobs near a concurrency limit: no more than the idle children start now.
            idle = max(0, len(lane.idle) - lane.ready())
            outcome = _into(lane, db, worker, flow.claim, worker, group, limit - got, keyed_only, idle)
            if outcome is None:
                return total
            got += len(outcome.jobs)
            total += len(outcome.jobs)
            if not keyed_only:
                lane.claimed_short(list(outcome.short))
        unkeyed_mixed = [queue for queue in split.mixed if queue not in flow.no_unkeyed]
        for group, unkeyed in ((split.plain, False), (unkeyed_mixed, True)):
            if not group or got >= limit:
                continue
            asked = limit - got
            claimed = _into(
                lane, db, worker, store.claim, worker, group, asked, unkeyed=unkeyed, with_rows=with_rows
            )
            if claimed is None:
                return total
            got += len(claimed)
            total += len(claimed)
            if len(claimed) < asked and unkeyed:
                flow.no_unkeyed.update(group)
            elif len(claimed) < asked:
                lane.claimed_short(group)  # nothing more is due in these queues
        # A mixed queue has nothing more to take once both of its claims came back short.
        lane.claimed_short([q for q in split.mixed if q in flow.no_keyed and q in flow.no_unkeyed])
        if got < limit or not lane.pending:
            return total
        want -= got
    return total


def _into[T: (list[ClaimedJob], Claimed)](
    lane: Lane, db: DatabaseGuard, worker: str, claim: Callable[..., T], *args: Any, **kwargs: Any
) -> T | None:
    """One claim through the guard, traced, its jobs into the lane's buffer; None when the
    database could not be reached."""
    began = time.time_ns()
    outcome = db.call(claim, *args, **kwargs)
    if outcome is None:
        return None
    jobs = outcome.jobs if isinstance(outcome, Claimed) else outcome
    if jobs:
        tracing.record("jobs.claim", began, **{"jobs.count": len(jobs), "jobs.worker": worker})
    lane.buffer.extend(jobs)
    return outcome
