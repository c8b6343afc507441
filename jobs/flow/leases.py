"""Leases: jobs of a type far from its limits that a worker takes without the type's gate.

A claim of limited jobs locks its type's gate and changes it (``jobs.flow.spare``), so
claims of one type take turns on one row and each pays for its update. Far from a type's
limits that buys nothing: a claim that counts (``jobs.flow.admission``) may then also hand
its worker a *lease*, ``jobs`` more of the type to take until ``until`` (µs of the
database's clock, ``LENGTH`` from now), and the worker takes them by the plain claim
(``Driver.claim(..., lease=…)``), which reads and writes no gate. So that nothing is
counted short:

- a lease counts as ``jobs`` running against the type's concurrency until ``GRACE`` after
  its end, in every claim that counts (the jobs it took are counted again as they run:
  a lease errs high, never low); the grace covers a leased claim that began before the
  end and committed after it. A worker's next claim that counts drops its own lease
  before it counts (its leased claims have all committed by then) and may take another;
- a lease's starts are recorded in the type's rate window when it is handed out, at its
  end plus ``RATE_MARGIN`` (later than any start the lease can make), so a window holds
  them at least as long as it would hold the starts themselves;
- a leased claim takes jobs only while the database's clock is before ``until``.

A lease is handed out only where it cannot matter to anyone else: its type's limits are
type-wide (no per-key template: a key's gate must be locked), and it takes at most a
``SHARE`` of what the type's spare allows, and no lease of fewer than ``LEAST`` jobs is
worth one. A limit near its use is therefore claimed as before,
counting at every claim; the leases of a limit far from it cost that limit nothing a
worker could have used.
"""

from __future__ import annotations

from typing import NamedTuple

from jobs.flow.rates import Window
from jobs.flow.spare import GateLimits

__all__ = [
    "GRACE",
    "LEAST",
    "LENGTH",
    "RATE_MARGIN",
    "SHARE",
    "Lease",
    "drop",
    "grant",
    "in_force_since",
    "size",
]

#: How long a lease lasts, µs.
LENGTH = 250_000
#: How long after its end a lease still counts as running (a leased claim that began
#: before the end and commits after it), µs.
GRACE = 2_000_000
#: How much later than a lease's end its starts are recorded in the rate window: a leased
#: claim on MariaDB stamps its jobs at its UPDATE, a round trip after the check (µs).
RATE_MARGIN = 100_000
#: The share of what a type's spare allows that one lease may take.
SHARE = 4
#: The fewest jobs a lease is worth (fewer where a worker may lease fewer): below that, the
#: claims it saves do not pay for the claim that hands it out.
LEAST = 64


class Lease(NamedTuple):
    """A lease handed out: ``jobs`` of the gate's type until ``until`` (µs of the
    database's clock, read at ``now``)."""

    until: int
    jobs: int
    now: int


def in_force_since(now: int) -> int:
    """The end after which a lease no longer counts at ``now`` (µs)."""
    return now - GRACE


def size(limits: GateLimits, running: int, window: Window, now: int, most: int) -> int:
    """How many jobs a lease of a type with these (type-wide) ``limits`` may hold, with
    ``running`` counted against its concurrency (leases in force included) and its rate
    ``window`` as it is: 0 when no lease is worth one."""
    if most <= 0 or (limits.concurrency is None and limits.rate is None):
        return 0
    jobs = most
    if limits.concurrency is not None:
        jobs = min(jobs, (limits.concurrency // 2 - running) // SHARE)
    if limits.rate is not None:
        jobs = min(jobs, window.room(now, limits.rate) // SHARE)
    return jobs if jobs >= min(LEAST, most) else 0


def grant(window: Window, limits: GateLimits, worker: str, jobs: int, now: int) -> Lease:
    """A lease of ``jobs`` to ``worker`` at ``now`` (µs), entered in the gate's ``window``:
    kept among its leases and its starts recorded (see the module's docstring)."""
    until = now + LENGTH
    drop(window, worker, now)  # and the leases that no longer count, whoever held them
    window.leases.append((until, jobs, worker))
    if limits.rate is not None:
        window.record(until + RATE_MARGIN, jobs, limits.rate.period)
    else:  # a gate with no rate keeps one mark of its last lease, so that no sweep prunes it meanwhile
        window.starts = [*(pair for pair in window.starts if pair[1]), (until + GRACE, 0)]
    return Lease(until, jobs, now)


def drop(window: Window, worker: str, now: int) -> None:
    """``worker``'s own leases out of ``window`` (its next claim that counts: every claim
    it made under them has committed), and every lease that no longer counts at ``now``."""
    since = in_force_since(now)
    window.leases = [lease for lease in window.leases if lease[2] != worker and lease[0] > since]
