"""Which claim candidates may start now: the one rule of flow control, with no SQL.

A claim of limited jobs (``jobs.store.claim_flowed``) locks due candidates in claim order,
locks the gates of their limit keys, counts what runs against each key and queue and reads
each rate key's recent starts, then asks ``admit`` which to take. Candidates are taken in
claim order while every limit they count against has room: a candidate over a limit is
passed over, not failed, and the ones behind it (another key, another queue) are still
taken. So a key at its limit does not hold up the others: fairness between keys is claim
order among those with room.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobs.drivers.protocol import Candidate, GateSave
from jobs.flow import leases, spare
from jobs.flow.limits import QUEUE_PREFIX, TYPE_PREFIX, TypeLimits, queue_key
from jobs.flow.queues import QueueLimits
from jobs.flow.rates import GATHER, MICROS, Rate, Window

__all__ = ["Admission", "Candidate", "Rules", "admit"]


@dataclass(frozen=True)
class Rules:
    """The limits a claim enforces: the queues' (those with limits) and each type's. Made
    for one claim: it remembers what it looked up (a claim asks about each candidate
    several times, and about each type for every candidate of it)."""

    queues: Mapping[str, QueueLimits]
    type_limits: Callable[[str], TypeLimits | None]
    _limits: dict[str, TypeLimits | None] = field(default_factory=dict, compare=False, repr=False)
    _keys: dict[tuple[str, str | None, str | None], tuple[str | None, str | None]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def limits(self, type_name: str) -> TypeLimits | None:
        try:
            return self._limits[type_name]
        except KeyError:
            found = self._limits[type_name] = self.type_limits(type_name)
            return found

    def keys(self, candidate: Candidate) -> tuple[str | None, str | None]:
        """The candidate's (concurrency key, rate key) under its type's limits now."""
        stored = (candidate.type, candidate.concurrency_key, candidate.rate_key)
        try:
            return self._keys[stored]
        except KeyError:
            pass
        limits = self.limits(candidate.type)
        found = (
            (None, None)
            if limits is None
            else limits.effective(candidate.type, (candidate.concurrency_key, candidate.rate_key))
        )
        self._keys[stored] = found
        return found

    def gate_limits(self, gate: str) -> spare.GateLimits | None:
        """What a type's or a queue's gate enforces now (None for a per-key gate)."""
        if gate.startswith(TYPE_PREFIX):
            return spare.gate_limits(gate, self.limits(gate[len(TYPE_PREFIX) :]), None)
        return spare.gate_limits(gate, None, self.queues.get(gate[len(QUEUE_PREFIX) :]))

    def gates(self, candidates: Iterable[Candidate]) -> set[str]:
        """Every gate a claim of these candidates locks: each limited queue's and each key's."""
        found: set[str] = set()
        # A claim's candidates mostly share their queue, type and keys: each kind once.
        for kind in {candidate[1:] for candidate in candidates}:
            candidate = Candidate(0, *kind)
            limits = self.queues.get(candidate.queue)
            if limits is not None and limits.limited:
                found.add(queue_key(candidate.queue))
            found.update(key for key in self.keys(candidate) if key is not None)
        return found


@dataclass(frozen=True)
class _Profile:
    """What ``admit`` holds the candidates of one queue, type and stored keys to: their
    queue's and type's limits, the keys in force, and the rate gates they count against.
    Worked out once per claim for all such candidates (a batch mostly shares one)."""

    queue_limits: QueueLimits
    type_limits: TypeLimits
    keys: tuple[str | None, str | None]
    queue_gate: str
    rates: tuple[tuple[str, Rate], ...]
    rekeyed: bool  # the keys in force are not those the row stores

    @classmethod
    def of(cls, candidate: Candidate, rules: Rules) -> _Profile:
        queue_limits = rules.queues.get(candidate.queue) or QueueLimits(candidate.queue)
        type_limits = rules.limits(candidate.type) or TypeLimits()
        keys = rules.keys(candidate)
        gate = queue_key(candidate.queue)
        rates: list[tuple[str, Rate]] = []
        if queue_limits.rate is not None:
            rates.append((gate, queue_limits.rate))
        if keys[1] is not None and type_limits.rate is not None:
            rates.append((keys[1], type_limits.rate))
        stored = (candidate.concurrency_key, candidate.rate_key)
        return cls(queue_limits, type_limits, keys, gate, tuple(rates), keys != stored)


@dataclass
class Admission:
    """What ``admit`` decided."""

    admitted: list[int] = field(default_factory=list)  # ids, in claim order
    rekeyed: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)  # keys to store
    windows: dict[str, Window] = field(default_factory=dict)  # rate windows that took starts
    gates: dict[str, GateSave] = field(default_factory=dict)  # what to store of the locked gates
    full_keys: set[str] = field(default_factory=set)  # concurrency keys at their limit
    full_queues: set[str] = field(default_factory=set)  # queues at their concurrency limit
    rate_waits: dict[str, int] = field(default_factory=dict)  # rate key → frees at (µs)
    queue_waits: dict[str, int] = field(default_factory=dict)  # queue → its rate frees at (µs)
    refused: int = 0  # candidates passed over for a limit
    alone: set[int] = field(default_factory=set)  # admitted near a concurrency limit
    deferred: int = 0  # candidates near a limit passed over for want of an idle child
    now: int = 0  # the database's clock the decision was made at (µs)
    # The claimer's leases (``jobs.flow.leases``) by type gate: the one handed out, or None
    # where its last one was dropped and none handed out.
    leases: dict[str, leases.Lease | None] = field(default_factory=dict)


@dataclass
class _Demand:
    """What taking every candidate of a claim adds to each limit (``_room_for_all``)."""

    queues: Counter[str] = field(default_factory=Counter)  # queue → jobs
    keys: Counter[str] = field(default_factory=Counter)  # concurrency key → jobs
    rates: Counter[str] = field(default_factory=Counter)  # rate gate → starts
    periods: dict[str, int] = field(default_factory=dict)  # rate gate → its longest period


def _room_for_all(
    chosen: list[Candidate],
    profile_of: Callable[[tuple[Any, ...]], _Profile],
    running_keys: Mapping[str, int],
    running_queues: Mapping[str, int],
    windows: Mapping[str, Window],
    now: int,
) -> _Demand | None:
    """What taking every one of ``chosen`` adds to each limit, if each limit has room for
    all of them with none of them near a concurrency limit, that is when ``admit``'s loop
    would take each one and none alone; else None. Worked out per kind of candidate (a
    claim's are mostly of one), not per candidate: far from every limit, the common case,
    admission costs a claim next to nothing. Each test is the loop's for the last
    candidate of a limit, the one that sees the most taken before it."""
    demand = _Demand()
    queue_limits: dict[str, int] = {}
    key_limits: dict[str, int] = {}
    rates: set[tuple[str, Rate]] = set()
    for kind, count in Counter(candidate[1:] for candidate in chosen).items():
        profile = profile_of(kind)
        queue = profile.queue_limits.queue
        demand.queues[queue] += count
        if profile.queue_limits.concurrency is not None:
            queue_limits[queue] = profile.queue_limits.concurrency
        key, limit = profile.keys[0], profile.type_limits.concurrency
        if key is not None and limit is not None:
            demand.keys[key] += count
            key_limits[key] = min(key_limits.get(key, limit), limit)  # types may share a key
        for gate, rate in profile.rates:
            demand.rates[gate] += count
            rates.add((gate, rate))
            demand.periods[gate] = max(demand.periods.get(gate, 0), rate.period)
    if any((running_queues.get(q, 0) + demand.queues[q]) * 2 > most for q, most in queue_limits.items()):
        return None
    if any((running_keys.get(k, 0) + demand.keys[k]) * 2 > most for k, most in key_limits.items()):
        return None
    if any((windows.get(g) or Window()).used(now, rate) + demand.rates[g] > rate.count for g, rate in rates):
        return None
    return demand


def admit(
    candidates: list[Candidate],
    want: int,
    now: int,
    rules: Rules,
    running_keys: Mapping[str, int],
    running_queues: Mapping[str, int],
    windows: Mapping[str, Window],
    idle: int | None = None,
    reckon: Iterable[str] = (),
    lease_to: str | None = None,
    lease_most: int = 0,
) -> Admission:
    """Up to ``want`` candidates, in claim order, whose every limit has room at ``now``
    (µs): a queue's and a type's or key's concurrency (``running_*`` counts what runs, plus
    what this claim takes) and rate (``windows``: the recent starts of each gate, plus this
    claim's). Windows that took starts are recorded at ``now``.

    A claimed job counts as running from its claim, also while it waits in a worker's
    buffer for a child. Far from its concurrency limits that costs nobody anything, so such
    a job is claimed like any other (batched, prefetched). A job that takes more than half
    of a concurrency limit (its queue's, or its type's or key's) is admitted ``alone``: one
    per ``idle`` child at most, to run at once, so that no slot near the limit waits in a
    buffer while another worker's child could run it; the others are ``deferred``.

    What to store of the gates (``Admission.gates``): each window that took starts, and the
    spare of each type's and queue's gate in ``reckon`` (``jobs.flow.spare``), whose
    running jobs ``running_*`` counted.

    The leases of a type gate's window (``jobs.flow.leases``) count as running against its
    concurrency. ``lease_to``: the claiming worker, whose own leases of the gates in
    ``reckon`` end here, and which may be handed a new one of up to ``lease_most`` jobs
    (``Admission.leases``)."""
    result = Admission(now=now)
    reckon = list(reckon)
    running_keys = _with_leases(windows, running_keys, result, reckon, lease_to, now)
    candidates_in_limited_queues = (
        {c.type for c in candidates if (held := rules.queues.get(c.queue)) is not None and held.limited}
        if lease_to is not None
        else set()
    )
    taken_keys: Counter[str] = Counter()
    taken_queues: Counter[str] = Counter()
    taken_rates: Counter[str] = Counter()
    periods: dict[str, int] = {}  # the longest period each rate gate was held to
    used: dict[tuple[str, int], int] = {}  # the starts in each gate's window, before this claim

    def rate_full(gate: str, rate: Rate) -> int | None:
        """When ``gate``'s window has room again, if it has none now; None if it has. "Room"
        is a few starts (``GATHER`` of the rate, what this claim wants at most): a worker
        waiting on a rate claims them together, not one start per claim."""
        periods[gate] = max(periods.get(gate, 0), rate.period)
        window = windows.get(gate) or Window()
        if (gate, rate.period) not in used:
            used[gate, rate.period] = window.used(now, rate)
        if used[gate, rate.period] + taken_rates[gate] < rate.count:
            return None
        need = max(1, min(want, int(rate.count * GATHER)))
        return window.frees_at(now, rate, taken_rates[gate], need)

    profiles: dict[tuple[Any, ...], _Profile] = {}

    def profile_of(kind: tuple[Any, ...]) -> _Profile:
        """The profile of the candidates of this kind (a candidate without its id)."""
        found = profiles.get(kind)
        if found is None:
            found = profiles[kind] = _Profile.of(Candidate(0, *kind), rules)
        return found

    demand = _room_for_all(candidates[:want], profile_of, running_keys, running_queues, windows, now)
    if demand is not None:  # every one of them is taken: no need to ask for each
        chosen, candidates = candidates[:want], []
        result.admitted = [candidate.id for candidate in chosen]
        if any(profile.rekeyed for profile in profiles.values()):
            result.rekeyed = {c.id: p.keys for c in chosen if (p := profile_of(c[1:])).rekeyed}
        taken_queues.update(demand.queues)
        taken_keys.update(demand.keys)
        taken_rates.update(demand.rates)
        periods.update(demand.periods)
    for candidate in candidates:
        if len(result.admitted) >= want:
            break
        queue = candidate.queue
        profile = profile_of(candidate[1:])
        queue_limits, type_limits = profile.queue_limits, profile.type_limits
        concurrency_key, rate_key = profile.keys
        rates = profile.rates

        if queue_limits.concurrency is not None and (
            running_queues.get(queue, 0) + taken_queues[queue] >= queue_limits.concurrency
        ):
            result.full_queues.add(queue)
        elif (
            frees := rate_full(profile.queue_gate, queue_limits.rate) if queue_limits.rate else None
        ) is not None:
            result.queue_waits[queue] = frees
        elif (
            concurrency_key is not None
            and type_limits.concurrency is not None
            and running_keys.get(concurrency_key, 0) + taken_keys[concurrency_key] >= type_limits.concurrency
        ):
            result.full_keys.add(concurrency_key)
        elif (
            rate_key is not None
            and type_limits.rate is not None
            and (frees := rate_full(rate_key, type_limits.rate)) is not None
        ):
            result.rate_waits[rate_key] = frees
        else:
            near = (
                queue_limits.concurrency is not None
                and (running_queues.get(queue, 0) + taken_queues[queue] + 1) * 2 > queue_limits.concurrency
            ) or (
                concurrency_key is not None
                and type_limits.concurrency is not None
                and (running_keys.get(concurrency_key, 0) + taken_keys[concurrency_key] + 1) * 2
                > type_limits.concurrency
            )
            if near and idle is not None and len(result.alone) >= idle:
                result.deferred += 1
                continue
            if near:
                result.alone.add(candidate.id)
            result.admitted.append(candidate.id)
            if profile.rekeyed:
                result.rekeyed[candidate.id] = profile.keys
            taken_queues[queue] += 1
            if concurrency_key is not None:
                taken_keys[concurrency_key] += 1
            for gate, _ in rates:
                taken_rates[gate] += 1
            continue
        result.refused += 1
    for gate, count in taken_rates.items():
        window = windows.get(gate) or Window()
        window.forget_before(now - periods[gate] * MICROS)
        window.record(now, count, periods[gate])
        result.windows[gate] = window
    result.gates = {gate: GateSave(window.dump()) for gate, window in result.windows.items()}
    for gate in reckon:
        limits = rules.gate_limits(gate)
        if limits is None:
            continue
        if gate.startswith(QUEUE_PREFIX):
            queue = gate[len(QUEUE_PREFIX) :]
            running = running_queues.get(queue, 0) + taken_queues[queue]
        else:
            running = running_keys.get(gate, 0) + taken_keys[gate]
        window = result.windows.get(gate) or windows.get(gate) or Window()
        if gate.startswith(TYPE_PREFIX):
            if lease_to is not None and _leasable(gate, rules, candidates_in_limited_queues):
                jobs = leases.size(limits, running, window, now, lease_most)
                if jobs:
                    result.leases[gate] = leases.grant(window, limits, lease_to, jobs, now)
                    running += jobs
            result.gates[gate] = spare.reckon(limits, running, window, now, window.dump())._replace(
                leases=window.dump_leases()
            )
        else:
            result.gates[gate] = spare.reckon(limits, running, window, now, window.dump())
    return result


def _with_leases(
    windows: Mapping[str, Window],
    running_keys: Mapping[str, int],
    result: Admission,
    reckon: Iterable[str],
    lease_to: str | None,
    now: int,
) -> Mapping[str, int]:
    """``running_keys`` with the leases in force of each type gate added; the claiming
    worker's own leases of the gates in ``reckon`` dropped first (``leases.drop``)."""
    if lease_to is not None:
        for gate in reckon:
            window = windows.get(gate)
            if window is not None and any(lease[2] == lease_to for lease in window.leases):
                leases.drop(window, lease_to, now)
                result.leases[gate] = None
    since = leases.in_force_since(now)
    held = {
        gate: count for gate, window in windows.items() if window.leases and (count := window.leased(since))
    }
    if not held:
        return running_keys
    return {**running_keys, **{gate: running_keys.get(gate, 0) + count for gate, count in held.items()}}


def _leasable(gate: str, rules: Rules, in_limited_queues: set[str]) -> bool:
    """May a lease of ``gate`` (a type's) be handed out: the type's limits are type-wide
    only (no key's gate to lock), and none of its jobs was seen in a queue with limits of
    its own (a leased claim does not hold them)."""
    name = gate[len(TYPE_PREFIX) :]
    limits = rules.limits(name)
    return (
        limits is not None
        and limits.concurrency_key is None
        and limits.rate_key is None
        and name not in in_limited_queues
    )
