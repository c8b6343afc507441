"""The supervisor's side of flow control (``jobs.flow``): which queues a claim may take
from, which claim takes them, and when to try again.

- A paused queue is left out of every claim.
- A queue without limits (none of its own, no limited type in it) keeps the one-statement
  claim (``store.claim``): flow control costs it nothing.
- A queue with limited types beside others ("mixed") keeps the one-statement claim for its
  jobs without limit keys, and claims its keyed jobs through ``store.claim_flowed``
  (``keyed_only``), which reads only them.
- A queue with limits of its own is claimed through ``store.claim_flowed`` whole.

A type far from its limits may be leased (``jobs.flow.leases``): a keyed claim asks for
leases, and the jobs a lease covers are then taken by the plain claim, first, until the
lease is spent, ends, or finds none due (until the next notice or poll).

What held jobs back is kept here and left out of the next claims: a key or queue at its
concurrency limit until a slot frees (a job of that queue ended here, another worker's
notice, or the next poll), a rate key or queue until its window has room again (the lane is
woken then, not at the next poll). A mixed queue whose keyed claim found nothing to take is
not asked again until a wake-up. So a worker whose due jobs are all over their limits
waits; it does not spin.

The queues' limits and pauses are read at most once per poll interval (``Controls``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from jobs import registry, store
from jobs.conf import jobs_settings
from jobs.drivers.orm import moment
from jobs.drivers.protocol import KEYED_JOBS_NOTICE, PLAIN_JOBS_NOTICE, Leased
from jobs.flow import admission
from jobs.flow.leases import Lease
from jobs.flow.limits import TYPE_PREFIX
from jobs.flow.queues import Controls, QueueLimits
from jobs.store import ClaimedJob

FREED = store.FREED_NOTICE

logger = logging.getLogger("jobs.worker")


@dataclass
class Split:
    """The queues of one claim, by how they are claimed."""

    plain: list[str] = field(default_factory=list)  # no limits: the one-statement claim
    mixed: list[str] = field(default_factory=list)  # limited types beside others
    limited: list[str] = field(default_factory=list)  # limits of their own: all flowed
    out: list[str] = field(default_factory=list)  # paused, or at a limit of their own


@dataclass
class HeldLease:
    """A lease this worker holds (``jobs.flow.leases``): what its claims may take, ``left``
    jobs of it until ``deadline`` (this process's clock, a little before the lease's end
    by the database's, which its claims check themselves)."""

    claim: Leased
    deadline: float
    left: int
    dry: bool = False  # its last claim found fewer due jobs than it asked for


@dataclass
class Claimed:
    """One claim's outcome for the supervisor."""

    jobs: list[ClaimedJob] = field(default_factory=list)
    short: set[str] = field(default_factory=set)  # queues with nothing more to take now
    retry_in: float | None = None  # seconds until a rate window that held jobs back frees


class FlowControl:
    def __init__(self, poll_interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.controls = Controls(poll_interval)
        self._clock = clock
        self._limited_types: set[str] | None = None
        self.full_keys: set[str] = set()
        self.full_queues: set[str] = set()
        self.rate_until: dict[str, float] = {}  # rate key → when its window has room
        self.queue_until: dict[str, float] = {}  # queue → when its rate window has room
        self.no_keyed: set[str] = set()  # mixed queues whose keyed claim came back short
        self.no_unkeyed: set[str] = set()  # mixed queues whose plain claim came back short
        self.lease_most = jobs_settings.FLOW_LEASE
        self.leases: dict[str, HeldLease] = {}  # type → the lease held of it
        self.lease_refused_until: dict[tuple[str, ...], float] = {}  # keyed claims not to ask again

    # --- what the rows say -----------------------------------------------------------------

    def refresh(self, *, force: bool = False) -> None:
        """Read the queues' limits and pauses when the last read is a poll interval old;
        what changed goes to the log."""
        before = self.controls.queues
        if not self.controls.refresh(self._clock(), force=force):
            return
        for queue, now in self.controls.queues.items():
            was = before.get(queue, QueueLimits(queue))
            if now.paused != was.paused:
                logger.info(
                    "Queue %s is %s.",
                    queue,
                    "paused: none of its jobs starts until it is resumed" if now.paused else "resumed",
                )
            if (now.concurrency, now.rate) != (was.concurrency, was.rate):
                logger.info("Queue %s: %s (from %s).", queue, now.describe(), now.source or "nowhere")
        for queue in set(before) - set(self.controls.queues):
            if before[queue].paused:
                logger.info("Queue %s is resumed.", queue)

    @property
    def limited_types(self) -> set[str]:
        """The queues that hold types with limits (read from the registry once: it is
        complete by the time a worker claims)."""
        if self._limited_types is None:
            self._limited_types = registry.limited_queues()
        return self._limited_types

    def paused(self, queue: str) -> bool:
        return self.controls.paused(queue)

    def flowed(self, queue: str) -> bool:
        """Is ``queue`` claimed through flow control (a limit of its own, or limited types)?"""
        return self.controls.limited(queue) or queue in self.limited_types

    # --- claiming ----------------------------------------------------------------------------

    def split(self, queues: Iterable[str]) -> Split:
        """``queues`` by how they are claimed: paused queues, and queues known to be at a
        limit of their own, are left out."""
        now = self._clock()
        found = Split()
        for queue in queues:
            if self.paused(queue):
                found.out.append(queue)
            elif self.controls.limited(queue):
                if queue in self.full_queues or self.queue_until.get(queue, 0.0) > now:
                    found.out.append(queue)
                else:
                    found.limited.append(queue)
            elif queue in self.limited_types:
                found.mixed.append(queue)
            else:
                found.plain.append(queue)
        return found

    def claim(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        keyed_only: bool = False,
        idle: int | None = None,
    ) -> Claimed:
        """A flow-controlled claim of ``queues`` (``split``'s limited ones, or with
        ``keyed_only`` the keyed jobs of its mixed ones)."""
        now = self._clock()
        self.rate_until = {key: at for key, at in self.rate_until.items() if at > now}
        group = tuple(queues)
        ask = self.lease_most if keyed_only and self.lease_refused_until.get(group, 0.0) <= now else 0
        rules = admission.Rules(
            queues={queue: limits for queue, limits in self.controls.queues.items() if limits.limited},
            type_limits=registry.limits_of,
        )
        got = store.claim_flowed(
            worker,
            queues,
            limit,
            rules,
            full_keys=self.full_keys,
            waiting_keys=self.rate_until,
            keyed_only=keyed_only,
            idle=idle,
            lease_most=ask,
        )
        self._held(got.leases, now)
        if ask and got.jobs and not any(got.leases.values()):  # no type far from its limits: spares a while
            self.lease_refused_until[group] = now + self.controls.max_age
        self.full_keys |= got.full_keys
        self.full_queues |= got.full_queues
        for key, wait in got.rate_waits.items():
            self.rate_until[key] = now + wait
        for queue, wait in got.queue_waits.items():
            self.queue_until[queue] = now + wait
        # Short: nothing more to take now. Jobs near a limit passed over for want of an idle
        # child are not: the lane claims again when a child is free.
        short = set(queues) if len(got.jobs) < limit and not got.deferred else set()
        if keyed_only:
            self.no_keyed |= short
        return Claimed(got.jobs, short, got.frees_in)

    def _held(self, leases: dict[str, Lease | None], asked_at: float) -> None:
        """The leases a claim handed out (or ended), by type gate."""
        for gate, lease in leases.items():
            name = gate[len(TYPE_PREFIX) :]
            limits = registry.limits_of(name)
            if lease is None or limits is None:
                self.leases.pop(name, None)
                continue
            concurrency_key, rate_key = limits.keys(name, {})
            logger.debug(
                "Leased %d jobs of %s for %.3f s.", lease.jobs, name, (lease.until - lease.now) / 1e6
            )
            self.leases[name] = HeldLease(
                Leased(name, concurrency_key, rate_key, moment(lease.until)),
                # Measured from before the claim was sent: earlier than the database's end.
                asked_at + (lease.until - lease.now) / 1e6,
                lease.jobs,
            )

    def usable_leases(self) -> list[HeldLease]:
        """The leases with jobs left, not ended, whose last claim found what it asked for."""
        now = self._clock()
        for name in [name for name, held in self.leases.items() if held.deadline <= now]:
            del self.leases[name]
        return [held for held in self.leases.values() if held.left > 0 and not held.dry]

    def claim_leased(
        self, worker: str, queues: Sequence[str], held: HeldLease, limit: int, with_rows: Sequence[str] = ()
    ) -> list[ClaimedJob]:
        """Up to ``limit`` jobs of ``queues`` that lease ``held`` covers, by the plain claim."""
        asked = min(limit, held.left)
        got = store.claim(worker, queues, asked, with_rows=with_rows, leased=held.claim)
        held.left -= len(got)
        held.dry = len(got) < asked
        return got

    def retry_at(self) -> float | None:
        """When the first rate window known to hold jobs back has room again."""
        moments = [*self.rate_until.values(), *self.queue_until.values()]
        return min(moments) if moments else None

    # --- wake-ups ----------------------------------------------------------------------------

    def slots_freed(self, queues: Iterable[str] = ()) -> None:
        """A job with a concurrency limit ended (here or, by its notice, elsewhere): every
        key and queue at its limit may have room again, and ``queues``' keyed jobs too."""
        self.full_keys.clear()
        self.full_queues.clear()
        self.no_keyed.difference_update(queues)

    def polled(self) -> None:
        """The poll: anything may have changed (a slot freed by a worker that cannot notify,
        a keyed job whose time came)."""
        self.slots_freed()
        self.no_keyed.clear()
        self.no_unkeyed.clear()
        self.lease_refused_until.clear()
        for held in self.leases.values():
            held.dry = False

    def jobs_due(self, queues: Iterable[str], *, keyed: bool = True, plain: bool = True) -> None:
        """A notice of new due jobs in ``queues``: keyed ones and plain ones among them,
        perhaps (unless the notice said they are all plain, or all keyed: then a mixed
        queue's claim of the other kind is not tried for them)."""
        queues = set(queues)
        if keyed:
            self.no_keyed.difference_update(queues)
            for held in self.leases.values():
                held.dry = False
        if plain:
            self.no_unkeyed.difference_update(queues)

    def expire_waits(self) -> None:
        """Rate windows whose time came: their keys and queues may be claimed again."""
        now = self._clock()
        self.queue_until = {queue: at for queue, at in self.queue_until.items() if at > now}
        self.rate_until = {key: at for key, at in self.rate_until.items() if at > now}
        self.no_keyed.clear()


class Notices(NamedTuple):
    """A listener's notices, by queue."""

    due: set[str]  # new due jobs, keyed ones among them perhaps
    plain: set[str]  # new due jobs, none with a limit key
    keyed: set[str]  # new due jobs, every one with a limit key
    freed: set[str]  # a slot of the queue's concurrency limits freed


def read_notices(payloads: Iterable[str]) -> Notices:
    notices = Notices(set(), set(), set(), set())
    for payload in payloads:
        if payload.startswith(FREED):
            notices.freed.add(payload[len(FREED) :])
        elif payload.startswith(PLAIN_JOBS_NOTICE):
            notices.plain.add(payload[len(PLAIN_JOBS_NOTICE) :])
        elif payload.startswith(KEYED_JOBS_NOTICE):
            notices.keyed.add(payload[len(KEYED_JOBS_NOTICE) :])
        else:
            notices.due.add(payload)
    return notices
