"""What a type's or a queue's limits surely still allow, so that a claim far from them
need not count.

A claim that counts (``jobs.flow.admission``) knows, under its gates' locks, what runs
against each limit and what each rate window holds. From that it reckons the *spare* of
each type's and queue's gate, kept on the gate row: the slots that may still be taken with
every job clear of half the concurrency limit (past which ``admit`` takes a job alone), and
the starts its rate window has room for however soon they come. Later claims take their
jobs against the spare in one statement (``Driver.flow_take_spared``) under the same gate
lock, lowering it and recording their starts in the window: nothing counted, nothing
decided in Python. The spare only errs low (jobs end and old starts age out without
raising it), so it never lets through what ``admit`` would hold back; once it is short, the
next claim counts again and reckons it anew. It is void when the limits in force are not
those it was reckoned for (``basis``: an operator changed a queue's) and one rate period
after it was reckoned (``until``: the window's older starts are then pruned by a counting
claim, so the window stays small).

Only a type's own gate (``type:<name>``) and a queue's have a spare: a per-key gate may be
shared by types that hold it to different numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jobs.drivers.protocol import Candidate, GateSave, SparedPlan
from jobs.flow.limits import QUEUE_PREFIX, TYPE_PREFIX, TypeLimits, queue_key
from jobs.flow.queues import QueueLimits
from jobs.flow.rates import MICROS, Rate, Window

__all__ = ["GateLimits", "gate_limits", "reckon", "spend"]


@dataclass(frozen=True)
class GateLimits:
    """The limits a type's or a queue's gate enforces: the type's own (keyless) ones, or
    the queue's."""

    concurrency: int | None = None
    rate: Rate | None = None

    @property
    def basis(self) -> str:
        """The limits in words a spare is reckoned for: a spare of other limits is void."""
        return f"concurrency {self.concurrency or '-'}, rate {self.rate or '-'}"

    @property
    def period(self) -> int | None:
        return self.rate.period if self.rate is not None else None


def gate_limits(
    gate: str, type_limits: TypeLimits | None, queue_limits: QueueLimits | None
) -> GateLimits | None:
    """What ``gate`` enforces, given its type's or its queue's limits; None for a per-key
    gate, which has no spare."""
    if gate.startswith(QUEUE_PREFIX):
        if queue_limits is None:
            return GateLimits()
        return GateLimits(queue_limits.concurrency, queue_limits.rate)
    if gate.startswith(TYPE_PREFIX):
        if type_limits is None:
            return GateLimits()
        return GateLimits(
            type_limits.concurrency if type_limits.concurrency_key is None else None,
            type_limits.rate if type_limits.rate_key is None else None,
        )
    return None


def reckon(limits: GateLimits, running: int, window: Window | None, now: int, recent: str) -> GateSave:
    """A gate's spare at ``now`` (µs), with ``running`` jobs against its concurrency (this
    claim's included) and its rate ``window`` holding this claim's starts; ``recent`` is the
    window as it is to be stored."""
    slots = None if limits.concurrency is None else max(0, limits.concurrency // 2 - running)
    starts = until = None
    if limits.rate is not None:
        starts = (window or Window()).room(now, limits.rate)
        until = now + limits.rate.period * MICROS
    return GateSave(recent, slots, starts, until, limits.basis)


def spend(
    plan: SparedPlan, held: Mapping[str, GateSave], candidates: Sequence[Candidate], now: int
) -> dict[str, GateSave] | None:
    """The gates ``held`` (locked, as stored) as a claim of ``candidates`` within their
    spares at ``now`` (µs, read once they were locked) leaves them: each spare lowered by
    the jobs that count against it, their starts recorded in its rate window (and the
    starts older than its period dropped, as a counting claim drops them). None when
    the claim must count instead: a gate is missing, a spare is void or short, or a
    candidate is not of a kind the ``plan`` takes. (PostgreSQL decides the same in SQL:
    ``jobs.drivers.postgres.FLOW_TAKE_SPARED``.)"""
    if set(held) != set(plan.gates):
        return None
    kinds = dict(zip(plan.types, zip(plan.concurrency_keys, plan.rate_keys, strict=True), strict=True))
    if any(kinds.get(c.type, ()) != (c.concurrency_key, c.rate_key) for c in candidates):
        return None
    spent: dict[str, GateSave] = {}
    for gate, basis, period in zip(plan.gates, plan.bases, plan.periods, strict=True):
        stored = held[gate]
        slots = sum(1 for c in candidates if gate in (c.concurrency_key, queue_key(c.queue)))
        starts = sum(1 for c in candidates if gate in (c.rate_key, queue_key(c.queue)))
        if (
            stored.spare_basis != basis
            or (stored.spare_until is not None and stored.spare_until <= now)
            or (stored.spare_slots is not None and stored.spare_slots < slots)
            or (stored.spare_starts is not None and stored.spare_starts < starts)
        ):
            return None
        if not (slots or starts):
            continue
        window = Window.load(stored.recent)
        if period is not None:
            window.forget_before(now - period * MICROS)
            window.record(now, starts, period)
        spent[gate] = stored._replace(
            recent=window.dump() if period is not None and starts else stored.recent,
            spare_slots=None if stored.spare_slots is None else stored.spare_slots - slots,
            spare_starts=None if stored.spare_starts is None else stored.spare_starts - starts,
        )
    return spent
