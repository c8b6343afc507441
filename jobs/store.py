"""The only code that changes a job's status: one function per verb.

enqueue, enqueue_many, enqueue_task, promote_due, claim, claim_flowed, claim_job, complete,
complete_in_transaction, fail, reschedule, release, heartbeat, set_progress, cancel,
cancel_if_queued, cancel_steps, retry, dismiss, reap, recover_worker, prune, prune_gates.

A workflow step's job is an ordinary job here; the transitions that matter to its workflow
(its completion, its end for good, its retry) call ``jobs.workflow.progress`` in their own
transaction (``complete_in_transaction``, ``_failed_for_good``, ``retry``).
The worker calls these; it never writes SQL itself. Neither does this module: how a
database does a verb is its driver's (``jobs.drivers``); what the verb means (which
transition applies, the fence, the backoff, what a reap or a release does) is decided here.

Every fenced verb (complete, complete_in_transaction, fail, reschedule, release,
set_progress) applies only while the job is still running under the same worker and
attempt, so a late result of a job that the reaper took back is dropped, never applied twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, models, transaction
from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Now
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from jobs import registry, retries, rollup, tracing, validation
from jobs.conf import jobs_settings
from jobs.drivers import driver
from jobs.drivers.orm import claimed_row_fields, micros, moment
from jobs.drivers.protocol import (
    Batch,
    Candidate,
    ClaimedJob,
    FlowTransaction,
    Leased,
    Locks,
    Promoted,
    Running,
    SparedPlan,
    Taken,
)
from jobs.errors import FencedOff, InvalidJobOption, InvalidPayload, InvalidTransition
from jobs.flow import admission
from jobs.flow.leases import Lease
from jobs.flow.limits import RESERVED, TYPE_PREFIX, queue_key
from jobs.flow.rates import Window
from jobs.models import ACTIVE, Job, JobAttempt, Status, TryLog, Worker
from jobs.rollup import Finished
from jobs.try_log import Log
from jobs.workflow import progress as workflows

logger = logging.getLogger("jobs.store")

REQUEUED_BY_ADMIN = "Requeued by an administrator."
REQUEUED_AFTER_RESTART = "Requeued after a worker restart."
BUDGET_EXHAUSTED = "Worker died and the retry budget is exhausted."
REQUEUED_AT_SHUTDOWN = "Stopped at worker shutdown and requeued."
CANCELLED = "Cancelled."
DISMISSED = "Dismissed by an administrator."


@dataclass(frozen=True)
class Failure:
    """What went wrong in one try."""

    error_class: str
    message: str
    traceback: str = ""
    retryable: bool = True

    @property
    def text(self) -> str:
        return f"{self.error_class}: {self.message}" if self.message else self.error_class


def due_later(run_at: datetime | None, now: datetime | None = None) -> bool:
    """Is a job queued for ``run_at`` waiting for a later time? Such a job stays out of
    the claims until a worker promotes it when due (``promote_due``); every transition
    that queues a job sets it. Judged by this host's clock: the claim compares run_at with
    the database's, so a skew between the two can delay a job by a poll, never run it early."""
    return run_at is not None and run_at > (now or timezone.now())


def notify(queues: Iterable[str]) -> None:
    """Wake idle workers of these queues (at commit). Enqueue does it by trigger."""
    driver().notify(sorted(set(queues)))


#: A notice that a slot of a queue's concurrency limits freed (a job of it ended), before
#: the queue's name: ``freed:ai``. Idle workers waiting on that limit claim again.
FREED_NOTICE = "freed:"


def notify_freed(queues: Iterable[str]) -> None:
    """Wake the workers waiting on these queues' concurrency limits (at commit; a no-op
    where workers poll)."""
    driver().notify([f"{FREED_NOTICE}{queue}" for queue in sorted(set(queues))])


# --- enqueue ------------------------------------------------------------------------------


def enqueue(
    type_name: str,
    payload: dict[str, Any] | None = None,
    *,
    priority: str | None = None,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
) -> Job:
    """Add a job in the caller's transaction (commit makes it visible, rollback drops it).

    The job carries the trace context of the span current now (``jobs.tracing``).

    With a dedupe key (derived from the payload when the type declares one, else the
    caller's ``dedupe_key``), a queued or running job of the same type and key is returned
    instead of adding a second one; the database's partial unique index decides races.

    Everything is checked before the first statement (``jobs.validation``): a refused
    payload or option raises ``InvalidPayload`` or ``InvalidJobOption`` and leaves the
    caller's transaction as it was.
    """
    job_type = registry.get(type_name)
    payload = {} if payload is None else payload
    payload_text = validation.payload_text(payload)
    dedupe_key = _dedupe_key(job_type, payload, validation.dedupe_key(dedupe_key))
    run_at = validation.run_at(run_at)
    concurrency_key, rate_key = validation.limit_keys(job_type, payload)
    fields: dict[str, Any] = {
        "type": job_type.name,
        "queue": job_type.queue,
        "priority": validation.priority(priority if priority is not None else job_type.priority),
        "payload": payload,
        "max_attempts": job_type.attempts,
        "dedupe_key": dedupe_key,
        "concurrency_key": concurrency_key,
        "rate_key": rate_key,
        "traceparent": tracing.traceparent(),
    }
    if run_at is not None:
        fields["run_at"] = run_at
    fields["due_later"] = due_later(run_at)
    # A concurrent twin may commit between our insert and our lookup, or finish between
    # the lookup and a new insert: a few rounds settle it.
    for _ in range(5):
        job = _insert_one(fields, payload_text)
        if job is not None:
            return job
        existing = Job.objects.filter(type=job_type.name, dedupe_key=dedupe_key, status__in=ACTIVE).first()
        if existing is not None:
            return existing
    raise IntegrityError(f"Could not enqueue {type_name} with dedupe key {dedupe_key!r}.")


def enqueue_task(
    type_name: str,
    payload: dict[str, Any],
    *,
    queue: str,
    priority: int,
    max_attempts: int,
    run_at: datetime | None = None,
    limit_keys: tuple[str | None, str | None] = (None, None),
) -> Job:
    """Add a django.tasks task (``jobs.backends``) in the caller's transaction, as
    ``enqueue`` adds a job: its type is the task's module path, its queue and priority (on
    the stored scale, see ``Priority``) the task's own; tasks have no dedupe key.
    ``limit_keys`` are its (concurrency key, rate key) under the limits the backend's
    OPTIONS give it (``jobs.flow``)."""
    fields: dict[str, Any] = {
        "type": type_name,
        "queue": queue,
        "priority": priority,
        "payload": payload,
        "max_attempts": max_attempts,
        "dedupe_key": None,
        "concurrency_key": validation.limit_key(limit_keys[0]),
        "rate_key": validation.limit_key(limit_keys[1]),
        "traceparent": tracing.traceparent(),
    }
    run_at = validation.run_at(run_at)
    if run_at is not None:
        fields["run_at"] = run_at
    fields["due_later"] = due_later(run_at)
    job = _insert_one(fields, validation.payload_text(payload))
    assert job is not None, "only a dedupe key can make an insert a no-op"
    return job


def _dedupe_key(job_type: registry.JobType, payload: dict[str, Any], given: str | None = None) -> str | None:
    """The key an enqueue stores; one made from the payload must fit its column too."""
    key = job_type.dedupe_key(payload, given)
    if job_type.dedupe is None:
        return key
    return validation.dedupe_key(key, error=InvalidPayload)


def _insert_one(fields: dict[str, Any], payload_text: str) -> Job | None:
    """Insert one job; None when an active job already holds its dedupe key."""
    return driver().insert_one(fields, payload_text)


def enqueue_many(
    type_name: str,
    payloads: Iterable[dict[str, Any]],
    *,
    priority: str | None = None,
    run_at: datetime | None = None,
    dedupe_keys: Sequence[str | None] | None = None,
    batch_size: int = 10_000,
) -> int:
    """Add many jobs of one type in a few statements; returns how many were added.

    Rows whose dedupe key is already active (or repeats an earlier row's) are skipped. The
    keys are derived from the payloads when the type declares its key; ``dedupe_keys``
    (one per payload) serves types that do not.
    """
    job_type = registry.get(type_name)
    if job_type.dedupe is not None and dedupe_keys is not None:
        raise InvalidJobOption(
            f"Job type {type_name!r} derives its dedupe keys from the payloads; do not pass them."
        )
    # Every payload and option is checked before the first batch is written.
    texts: list[str] = []
    keys: list[str | None] = []
    limit_keys: list[tuple[str | None, str | None]] = []
    for payload in payloads:
        texts.append(validation.payload_text(payload))
        keys.append(_dedupe_key(job_type, payload))
        limit_keys.append(validation.limit_keys(job_type, payload))
    if dedupe_keys is not None:
        keys = [validation.dedupe_key(key) for key in dedupe_keys]
        if len(keys) != len(texts):
            raise InvalidJobOption("dedupe_keys must have one entry per payload.")
    run_at = validation.run_at(run_at)
    priority_number = validation.priority(priority if priority is not None else job_type.priority)
    added = 0
    parent = tracing.traceparent()
    for start in range(0, len(texts), batch_size):
        added += driver().insert_many(
            Batch(
                type=job_type.name,
                queue=job_type.queue,
                priority=priority_number,
                max_attempts=job_type.attempts,
                run_at=run_at,
                payloads=texts[start : start + batch_size],
                dedupe_keys=keys[start : start + batch_size],
                limit_keys=limit_keys[start : start + batch_size] if job_type.limits else None,
                traceparent=parent,
                due_later=due_later(run_at),
            )
        )
    return added


# --- claim and finish ---------------------------------------------------------------------

PROMOTE_BATCH = 1000  # jobs due later made claimable in one statement


def promote_due(limit: int = PROMOTE_BATCH) -> Promoted:
    """Make claimable the jobs due later whose time has come, up to ``limit`` (earliest
    first), waking their queues' idle workers where the database notifies; with the seconds
    until the next one is due. Workers call it on every poll and when that moment comes
    (``jobs.worker.promoter``); a full batch means more may be due."""
    return driver().promote_due(limit)


def claim(
    worker: str,
    queues: Sequence[str],
    limit: int,
    *,
    unkeyed: bool = False,
    with_rows: Sequence[str] = (),
    leased: Leased | None = None,
) -> list[ClaimedJob]:
    """Take up to ``limit`` due jobs of ``queues`` for ``worker``, in claim order; with
    ``unkeyed``, only jobs without flow-control keys (a queue that also holds limited types:
    its keyed jobs are ``claim_flowed``'s); with ``leased``, only the jobs a lease
    ``claim_flowed`` handed out covers (``jobs.flow.leases``). ``with_rows``: types whose
    tries read their rows (``JobType.read_ahead``): where the driver can, their jobs come
    with what those tries read (``ClaimedJob.try_fields``)."""
    if limit <= 0 or not queues:
        return []
    return driver().claim(worker, queues, limit, unkeyed=unkeyed, with_rows=with_rows, leased=leased)


# --- the claim of jobs with flow limits (``jobs.flow``) -----------------------------------------

#: Candidates a flow-controlled claim locks beyond what it wants, to stand in for those
#: over a limit; more rounds find others when all of them are (``FLOW_ROUNDS``).
FLOW_SLACK = 8
#: Rounds one flow-controlled claim makes at most, each its own short transaction that
#: leaves out the keys and queues the rounds before it found at their limits (a round that
#: finds gates to create first counts too).
FLOW_ROUNDS = 4
# The gate rows this process knows exist: a claim creates missing ones first, outside its
# own transaction (``Driver.flow_add_gates``). Forgotten when a sweep pruned one.
_known_gates: set[str] = set()
# The type and queue gates ("type:…", "queue:…") each claim of a group of queues took
# last time. Every claim locks those first, in key order, before its per-key gates (also
# in key order): one order for every claimer, so two claims never wait on each other in a
# circle. A claim that needs one it did not expect ends its round and locks it in the next.
_expected: dict[tuple[tuple[str, ...], bool], tuple[str, ...]] = {}
_KNOWN_GATES_MAX = 100_000
# The groups whose last round had room for every job it looked at, under type and queue
# limits only: their next round takes its jobs at once (``_admit_taken``), where the
# driver offers it. A round that finds a job without room puts its group back.
_roomy: set[tuple[tuple[str, ...], bool]] = set()
# The kinds of job each roomy group's rounds took: each type with the limit keys its rows
# store, where those are the keys in force. A claim within the gates' spares takes these
# and no others (``_spared_plan``).
_kinds: dict[tuple[tuple[str, ...], bool], dict[str, tuple[str | None, str | None]]] = {}


@dataclass
class FlowClaim:
    """What a flow-controlled claim took, and what held the rest back: the worker leaves
    out full keys and queues until a slot frees, and waiting rate keys and queues until
    their window does (seconds from now)."""

    jobs: list[ClaimedJob] = field(default_factory=list)
    refused: int = 0  # due jobs passed over for a limit
    deferred: int = 0  # due jobs near a concurrency limit passed over for want of an idle child
    full_keys: set[str] = field(default_factory=set)
    full_queues: set[str] = field(default_factory=set)
    rate_waits: dict[str, float] = field(default_factory=dict)
    queue_waits: dict[str, float] = field(default_factory=dict)
    # The worker's leases by type gate (``jobs.flow.leases``): handed out, or None: ended.
    leases: dict[str, Lease | None] = field(default_factory=dict)

    @property
    def frees_in(self) -> float | None:
        """Seconds until the first rate window that held a job back has room again."""
        waits = [*self.rate_waits.values(), *self.queue_waits.values()]
        return min(waits) if waits else None


class _GatesMissing(Exception):
    def __init__(self, keys: set[str]) -> None:
        super().__init__(f"{len(keys)} gates to create")
        self.keys = keys


def claim_flowed(
    worker: str,
    queues: Sequence[str],
    limit: int,
    rules: admission.Rules,
    *,
    full_keys: Iterable[str] = (),
    waiting_keys: Iterable[str] = (),
    keyed_only: bool = False,
    idle: int | None = None,
    lease_most: int = 0,
) -> FlowClaim:
    """Take up to ``limit`` due jobs of ``queues`` for ``worker``, in claim order, each
    only while every limit it counts against has room: its queue's, its type's or key's
    concurrency and rate (``rules``). A job over a limit stays queued as it was (no
    attempt used) and the jobs behind it are still taken. ``full_keys`` and
    ``waiting_keys`` (concurrency and rate keys known to be at their limit) are left out.
    ``keyed_only``: only the jobs that carry limit keys (the queues have no limits of
    their own; their other jobs are ``claim(..., unkeyed=True)``'s). ``idle``: the worker's
    idle children, the most jobs near a concurrency limit it takes (``admission.admit``:
    those go to a child alone, ``ClaimedJob.held``). ``lease_most``: hand ``worker`` a
    lease of up to that many jobs of each type far from its limits (``jobs.flow.leases``;
    0: none), ending the leases it holds of the types this claim counts
    (``FlowClaim.leases``).

    Each round is one short transaction: lock candidates (``SKIP LOCKED``), lock their
    keys' gates (claims of the same keys wait for each other here, for this transaction
    only), count what runs of each key from the rows, decide (``jobs.flow.admission``),
    mark the admitted running and record their starts in the rate windows."""
    result = FlowClaim()
    open_queues = list(queues)
    full, waiting = set(full_keys), set(waiting_keys)
    rounds = 0
    while rounds < FLOW_ROUNDS and open_queues and len(result.jobs) < limit:
        rounds += 1
        try:
            alone = None if idle is None else idle - sum(job.held for job in result.jobs)
            taken, decided, exhausted = _flow_round(
                worker,
                open_queues,
                limit - len(result.jobs),
                rules,
                full,
                waiting,
                keyed_only,
                alone,
                lease_most,
            )
        except _GatesMissing as missing:
            driver().flow_add_gates(sorted(missing.keys))
            if len(_known_gates) > _KNOWN_GATES_MAX:
                _known_gates.clear()
            _known_gates.update(missing.keys)
            continue
        result.jobs.extend(taken)
        if decided is None:
            break
        result.leases.update(decided.leases)
        result.refused += decided.refused
        result.deferred += decided.deferred
        result.full_keys |= decided.full_keys
        result.full_queues |= decided.full_queues
        now = decided.now
        result.rate_waits.update({key: max(0.0, (at - now) / 1e6) for key, at in decided.rate_waits.items()})
        result.queue_waits.update(
            {queue: max(0.0, (at - now) / 1e6) for queue, at in decided.queue_waits.items()}
        )
        if not decided.refused or exhausted:
            break  # nothing was held back, or every due job was seen
        full |= decided.full_keys
        waiting |= set(decided.rate_waits)
        open_queues = [
            q for q in open_queues if q not in decided.full_queues and q not in decided.queue_waits
        ]
    return result


def _flow_round(
    worker: str,
    queues: list[str],
    want: int,
    rules: admission.Rules,
    full: set[str],
    waiting: set[str],
    keyed_only: bool,
    idle: int | None,
    lease_most: int = 0,
) -> tuple[list[ClaimedJob], admission.Admission | None, bool]:
    """One transaction of ``claim_flowed``: the jobs taken, what was decided (None when
    nothing was due), and whether every due job of ``queues`` was a candidate. A round
    that may hand out a lease counts (a claim within the spares would not)."""
    asked = want + FLOW_SLACK
    group = (tuple(queues), keyed_only)
    # The type and queue gates this claim took last time (those that exist), locked before
    # its candidates, in the same round trip; gates of per-key limits after them.
    expected = [gate for gate in _expected.get(group, ()) if gate in _known_gates]
    counted = sorted(q for q in queues if (limits := rules.queues.get(q)) is not None and limits.concurrency)
    first = Locks(expected, [gate for gate in expected if gate.startswith(TYPE_PREFIX)], counted)
    # Not in a caller's transaction (a test's): it would hold the gates past the claim.
    spares = not connection.in_atomic_block
    if spares and expected and group in _roomy and not lease_most:
        plan = _spared_plan(group, rules, expected, worker, want, sorted(full), sorted(waiting))
        spared = driver().flow_take_spared(plan) if plan is not None else None
        if spared is not None:  # within the spares: no count, no decision
            return spared, admission.Admission(), len(spared) < want
    with driver().flow_transaction() as round_:
        if expected and group in _roomy and round_.takes:
            at_once = round_.take(
                worker, queues, want, sorted(full), sorted(waiting), keyed_only=keyed_only, first=first
            )
            found = _admit_taken(round_, worker, at_once, want, rules, idle, lease_most)
            if found is not None:
                _note_roomy(group, at_once.candidates, rules)
                return found
            round_.end()  # a job had no room: nothing of that round stays
            _roomy.discard(group)
        # Locks the candidates (SKIP LOCKED: claimers split them) until this transaction
        # ends; those not taken are queued as they were when it does.
        candidates, recent, running = round_.candidates(
            queues,
            asked,
            sorted(full),
            sorted(waiting),
            keyed_only=keyed_only,
            first=first if expected else None,
        )
        if not candidates:
            return [], None, True
        gates = rules.gates(candidates)
        if gates - _known_gates:
            raise _GatesMissing(gates - _known_gates)  # ends the round: nothing was changed
        typed = {gate for gate in gates if gate.startswith(RESERVED)}
        _expected[group] = tuple(sorted(typed))
        if missing := typed - set(recent):  # not expected, or pruned since: the next round
            _known_gates.difference_update(missing)  # makes them if need be, and locks them first
            raise _GatesMissing(missing)
        # Waits for another claim of the same keys to commit, then holds them: nobody else
        # takes their slots until this transaction ends, a few milliseconds from now.
        keyed = sorted(gates - typed)
        if keyed:
            keys = sorted({key for c in candidates if (key := rules.keys(c)[0]) is not None and key in keyed})
            more, counts = round_.lock_and_count(keyed, keys, [])
            if len(more) < len(keyed):  # a sweep pruned some since this process made them
                _known_gates.difference_update(keyed)
                raise _GatesMissing(set(keyed) - set(more))
            recent = {**recent, **more}
            running = Running(
                counts.now,
                {**(running.keys if running else {}), **counts.keys},
                running.queues if running else {},
            )
        elif not gates:
            running = None  # no limit applies: nothing to count, nothing locked
        now = running.now if running is not None else micros(timezone.now())
        windows = {key: Window.load(text) for key, text in recent.items() if key in gates}
        decided = admission.admit(
            candidates,
            want,
            now,
            rules,
            running.keys if running else {},
            running.queues if running else {},
            windows,
            idle,
            reckon=typed,
            lease_to=worker if lease_most else None,
            lease_most=lease_most,
        )
        claimed = round_.finish(
            worker,
            decided.admitted,
            moment(now) if running is not None else None,
            decided.rekeyed,
            decided.gates,
        )
        taken = [job._replace(held=True) if job.id in decided.alone else job for job in claimed]
    if not keyed and not (decided.refused or decided.deferred or decided.alone or decided.rekeyed):
        _note_roomy(group, candidates, rules)
    else:
        _roomy.discard(group)
    return taken, decided, len(candidates) < asked


def _note_roomy(
    group: tuple[tuple[str, ...], bool], candidates: Iterable[Candidate], rules: admission.Rules
) -> None:
    """A round of ``group`` had room for every job it looked at, under type and queue limits
    only: its kinds of job may be taken within the spares from now on."""
    _roomy.add(group)
    kinds = _kinds.setdefault(group, {})
    for candidate in candidates:
        stored = (candidate.concurrency_key, candidate.rate_key)
        if rules.keys(candidate) == stored:
            kinds[candidate.type] = stored


def _spared_plan(
    group: tuple[tuple[str, ...], bool],
    rules: admission.Rules,
    expected: Sequence[str],
    worker: str,
    want: int,
    full: Sequence[str],
    waiting: Sequence[str],
) -> SparedPlan | None:
    """A claim of ``want`` jobs of ``group`` for ``worker`` within the spares of its
    ``expected`` gates; None when it cannot be one (a limited queue whose gate it would
    not lock)."""
    queues, keyed_only = group
    gates = set(expected)
    if any(queue_key(q) not in gates for q in queues if (held := rules.queues.get(q)) and held.limited):
        return None
    bases, periods = [], []
    for gate in expected:
        limits = rules.gate_limits(gate)
        if limits is None:
            return None
        bases.append(limits.basis)
        periods.append(limits.period)
    # Only kinds whose every key's gate is locked: a type's own gate, the others none.
    kinds = {
        name: keys
        for name, keys in _kinds.get(group, {}).items()
        if all(key is None or key in gates for key in keys)
    }
    return SparedPlan(
        worker,
        queues,
        want,
        full,
        waiting,
        keyed_only,
        list(expected),
        bases,
        periods,
        list(kinds),
        [keys[0] for keys in kinds.values()],
        [keys[1] for keys in kinds.values()],
    )


def _admit_taken(
    round_: FlowTransaction,
    worker: str,
    taken: Taken,
    want: int,
    rules: admission.Rules,
    idle: int | None,
    lease_most: int = 0,
) -> tuple[list[ClaimedJob], admission.Admission | None, bool] | None:
    """The end of a round of ``_flow_round`` that expected room for every job (its group's
    last round had it) and so took them at once (``FlowTransaction.take``): the jobs taken,
    admitted now, and the round committed. None, the round not committed, when one of them
    had no room or counts against a gate not locked up front (a per-key limit, a type new to
    the group): the caller rolls it back and makes a round of its own."""
    if not taken.jobs:
        return [], None, True
    gates = rules.gates(taken.candidates)
    if not gates <= set(taken.recent):
        return None
    windows = {key: Window.load(text) for key, text in taken.recent.items() if key in gates}
    running = taken.running
    decided = admission.admit(
        taken.candidates,
        want,
        running.now,
        rules,
        running.keys,
        running.queues,
        windows,
        idle,
        reckon=[gate for gate in gates if gate.startswith(RESERVED)],
        lease_to=worker if lease_most else None,
        lease_most=lease_most,
    )
    if len(decided.admitted) < len(taken.jobs) or decided.alone or decided.rekeyed:
        return None
    round_.finish(worker, [], None, {}, decided.gates)
    return taken.jobs, decided, len(taken.jobs) < want


def prune_gates(now: datetime | None = None, batch_size: int = 1000) -> int:
    """Delete the gates whose windows hold no start of the last hour (the longest period):
    a claim that needs one again makes it. A gate a claim holds is skipped."""
    horizon = micros(now or timezone.now()) - 3600 * 1_000_000

    def keep(key: str, recent: str) -> bool:
        newest = Window.load(recent).newest
        return newest is not None and newest > horizon

    pruned = driver().flow_prune_gates(keep, batch_size)
    _known_gates.clear()
    return pruned


def claim_job(worker: str, job_id: int) -> ClaimedJob | None:
    """Take one queued job by id for ``worker``, whatever its ``run_at`` (``jobs.testing``
    runs a test's job inline this way); None when it is not queued. The row lock keeps a
    worker's claim from taking it at the same moment."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id, status=Status.QUEUED).first()
        if job is None:
            return None
        Job.objects.filter(pk=job_id).update(**claimed_row_fields(worker))
    return ClaimedJob(
        job.pk, job.type, json.dumps(job.payload), job.attempts + 1, job.max_attempts, job.queue, job.step_id
    )


def complete(worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None = None) -> list[int]:
    """Mark ``(job id, attempt)`` pairs succeeded; returns the ids that applied.

    ``results``, one per pair, is what each job returned as JSON text (django.tasks tasks
    do; see ``jobs.backends``), stored with it. Ids missing from the result were no longer
    running under this worker and attempt: their late result is dropped and logged.
    """
    if not done:
        return []
    finished = driver().complete_many(worker, done, results)
    applied = [job.id for job in finished]
    if len(applied) != len(done):
        dropped = sorted({job_id for job_id, _ in done} - set(applied))
        logger.warning("Dropped late results of jobs %s: no longer running under %s.", dropped, worker)
    # The charts' rollup (``jobs.rollup``): counted, from what the acknowledgement returned.
    rollup.record([Finished(job.queue, job.type, rollup.SUCCEEDED, job.waited, job.ran) for job in finished])
    return applied


def count_settled(job_ids: Sequence[int]) -> None:
    """Add atomic jobs that committed their own success (``complete_in_transaction``) to the
    rollup: the supervisor hears of them after the fact, so their times are read back."""
    if job_ids:
        done = driver().done(job_ids)
        rollup.record([Finished(job.queue, job.type, rollup.SUCCEEDED, job.waited, job.ran) for job in done])


def complete_in_transaction(
    worker: str,
    job_id: int,
    attempt: int,
    *,
    step: int | None = None,
    result: str | None = None,
    keep_result: bool = False,
) -> None:
    """Mark one job succeeded inside the caller's open transaction: the last statement of an
    atomic job's handler transaction (``@job(atomic=True)``), so the handler's writes and
    the job's completion commit together or not at all.

    A workflow step's job (``step``, its ``result`` as JSON text) completes here too, atomic
    or not: its step succeeds and the steps that follow it are released in this same
    transaction (``jobs.workflow.progress.step_succeeded``). ``keep_result`` stores the
    result on the job's row as well (a django.tasks task's).

    Fenced like ``complete``: it applies only while the job is still running under this
    worker and attempt. When it no longer is (the reaper took it back, and another try may
    have run it already), it raises ``FencedOff`` and the caller's transaction must roll
    back, the handler's writes with it.
    """
    if not connection.in_atomic_block:
        raise TransactionManagementError("complete_in_transaction() runs inside the handler's transaction.")
    stored = {"result": json.loads(result)} if keep_result and result is not None else {}
    # The fenced UPDATE locks the one job row until the handler's transaction commits a
    # moment later; the worker's heartbeat of that row waits that long.
    applied = driver().set_state_if_running(
        worker, job_id, attempt, status=Status.SUCCEEDED, finished_at=Now(), progress=100, error="", **stored
    )
    if not applied:
        raise FencedOff(f"Job #{job_id} try {attempt} is no longer running under {worker}.")
    if step is not None:
        workflows.step_succeeded(step, result)


def _fit(model: type[models.Model], column: str, text: str) -> str:
    """``text`` cut to what the model's ``column`` holds."""
    return text[: model._meta.get_field(column).max_length]  # type: ignore[union-attr]


def fail(worker: str, job_id: int, attempt: int, failure: Failure) -> str | None:
    """Record a failed try; the job is queued again after its backoff, or fails for good.

    Returns the job's new status, or None when the result was fenced off.
    """
    with transaction.atomic():
        # Locks the one job row until the attempt is recorded.
        job = driver().lock_if_running(worker, job_id, attempt)
        if job is None:
            logger.warning("Dropped late failure of job %s try %s: no longer ours.", job_id, attempt)
            return None
        now = timezone.now()
        tried = _finished(job, now, "")
        job.error = failure.text
        if retries.retried(job.attempts, job.max_attempts, retryable=failure.retryable):
            job.status = Status.QUEUED
            job.run_at = now + retries.backoff(job.type, job.attempts)
            job.due_later = due_later(job.run_at, now)
            job.heartbeat_at = None
        else:
            job.status = Status.FAILED
            job.finished_at = now
        job.save(update_fields=["status", "error", "run_at", "due_later", "heartbeat_at", "finished_at"])
        _record_attempt(job, worker, failure)
        if job.status == Status.FAILED:
            _failed_for_good(job, f"failed: {failure.text}")
    rollup.record([tried.with_outcome(_outcome_of(job))])
    return job.status


def _finished(job: Job, now: datetime, outcome: str) -> Finished:
    """A try that ended now, as the rollup counts it (read before the row changes)."""
    waited = (job.started_at - job.run_at).total_seconds() if job.started_at else None
    ran = (now - job.started_at).total_seconds() if job.started_at else None
    return Finished(job.queue, job.type, outcome, waited, ran)


def _outcome_of(job: Job) -> str:
    return rollup.RETRIED if job.status == Status.QUEUED else rollup.FAILED


def _failed_for_good(job: Job, reason: str) -> None:
    """The one place a job's end for good reaches its workflow: its failure with no try
    left (``fail``, a reaped job with its budget spent) or its cancel. In the transaction
    of that transition, so both commit together (``jobs.workflow.progress.step_failed``)."""
    if job.step_id is not None:
        workflows.step_failed(job, reason)


def _record_attempt(job: Job, worker: str, failure: Failure, outcome: str | None = None) -> None:
    """The audit log's row of this try (numbered across an operator's retries)."""
    JobAttempt.objects.create(
        job=job,
        type=job.type,
        attempt=job.earlier_attempts + job.attempts,
        worker=worker,
        started_at=job.started_at,
        error_class=_fit(JobAttempt, "error_class", failure.error_class),
        error=failure.message,
        traceback=failure.traceback,
        outcome=outcome or job.status,
    )


POSTPONED = "postponed"  # the outcome of a try that asked to run later (audit log)


def reschedule(worker: str, job_id: int, attempt: int, at: datetime, reason: str) -> bool:
    """Put a job that raised ``RetryLater`` back in the queue for ``at``: not a failure,
    so its attempt is given back and its error kept as it was; ``reason`` becomes its
    message. Recorded in the audit log with the outcome "postponed". False when the
    result was fenced off.

    ``at`` is capped at ``JOBS_MAX_RETRY_LATER_SECONDS`` from now, whoever asked: a host's
    "retry in 3e9 seconds" must not park a job (and hold its dedupe key) for a century."""
    now = timezone.now()
    at = min(at, now + timedelta(seconds=jobs_settings.MAX_RETRY_LATER_SECONDS))
    with transaction.atomic():
        # Locks the one job row until it is queued again and the try is recorded.
        job = driver().lock_if_running(worker, job_id, attempt)
        if job is None:
            logger.warning("Dropped late reschedule of job %s try %s: no longer ours.", job_id, attempt)
            return False
        _record_attempt(job, worker, Failure("jobs.RetryLater", reason), outcome=POSTPONED)
        job.status = Status.QUEUED
        job.attempts -= 1
        job.run_at = at
        job.due_later = due_later(at, now)
        job.locked_by = None
        job.started_at = job.heartbeat_at = None
        job.progress = None
        job.progress_message = ""
        job.message = _fit(Job, "message", reason)
        job.save(
            update_fields=[
                "status",
                "attempts",
                "run_at",
                "due_later",
                "locked_by",
                "started_at",
                "heartbeat_at",
                "progress",
                "progress_message",
                "message",
            ]
        )
        if not job.due_later:
            notify([job.queue])
    return True


def release(worker: str, items: Sequence[tuple[int, int]], message: str = "") -> int:
    """Put jobs of a stopping worker back at once, without using up an attempt."""
    if not items:
        return 0
    released = 0
    queues: set[str] = set()
    with transaction.atomic():
        for job_id, attempt in items:
            job = driver().lock_if_running(worker, job_id, attempt)
            if job is not None and driver().set_state_if_running(
                worker,
                job_id,
                attempt,
                status=Status.QUEUED,
                attempts=F("attempts") - 1,
                locked_by=None,
                started_at=None,
                heartbeat_at=None,
                run_at=Now(),
                due_later=False,
                progress=None,
                progress_message="",
                message=message,
            ):
                released += 1
                queues.add(job.queue)
        notify(queues)
    return released


def heartbeat(worker: str, job_ids: Iterable[int] | None = None) -> int:
    """Keep this worker's registry row and running jobs alive; returns jobs touched.

    The worker names the jobs it holds: a job it no longer knows (say its acknowledgement
    was lost in a database crash) then goes silent and is reaped, instead of being kept
    "running" forever.
    """
    running = Job.objects.filter(status=Status.RUNNING, locked_by=worker)
    if job_ids is not None:
        running = running.filter(id__in=list(job_ids))
    touched = running.update(heartbeat_at=Now())
    Worker.objects.filter(name=worker).update(last_seen=Now())
    return touched


def set_progress(worker: str, job_id: int, attempt: int, percent: int, message: str) -> bool:
    return driver().set_state_if_running(
        worker,
        job_id,
        attempt,
        progress=percent,
        progress_message=_fit(Job, "progress_message", message),
        heartbeat_at=Now(),
    )


# --- operator actions ---------------------------------------------------------------------


def cancel(job: Job | int) -> Job:
    """Cancel a queued job. A running one has to be waited out."""
    job_id = job.pk if isinstance(job, Job) else job
    with transaction.atomic():
        row = Job.objects.select_for_update().get(pk=job_id)
        if row.status != Status.QUEUED:
            raise InvalidTransition(f"Only a queued job can be cancelled; job #{row.pk} is {row.status}.")
        _mark_cancelled(row)
    return row


def cancel_if_queued(type_name: str, dedupe_key: str) -> Job | None:
    """Cancel the queued job of this type and key, if there is one; returns it.

    A running job is left alone (it has to be waited out) and None is returned, as when
    there is no job. A worker claiming the job at the same moment wins or loses on the row
    lock: the claim skips a row locked here, and a row it claimed first is no longer queued
    when this lock is granted.
    """
    with transaction.atomic():
        # Locks the one queued row of the key (the jobs_dedupe_active index finds it).
        row = (
            Job.objects.select_for_update()
            .filter(type=type_name, dedupe_key=dedupe_key, status=Status.QUEUED)
            .first()
        )
        if row is None:
            return None
        _mark_cancelled(row)
    return row


def _mark_cancelled(row: Job) -> None:
    row.status = Status.CANCELLED
    row.finished_at = timezone.now()
    row.message = CANCELLED
    row.save(update_fields=["status", "finished_at", "message"])
    _failed_for_good(row, f"was cancelled (job #{row.pk}).")


def cancel_steps(steps: models.QuerySet[Any]) -> list[int]:
    """Cancel the queued jobs of these workflow steps (a cancelled workflow's); returns
    their steps. A job a worker is claiming at this moment is skipped (it runs: a running
    step is waited out), so nothing here waits on a claim. Locks the jobs it cancels until
    the caller's transaction ends; the caller holds the workflow's row."""
    rows = list(
        Job.objects.select_for_update(skip_locked=True)
        .filter(status=Status.QUEUED, step_id__in=steps)
        .values_list("pk", "step_id")
    )
    if rows:
        Job.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            status=Status.CANCELLED, finished_at=Now(), message=CANCELLED
        )
    return [step for _, step in rows]


def retry(job: Job | int) -> Job:
    """Give a failed job a full new budget: attempts reset to zero, error cleared. The
    tries it used are added to ``earlier_attempts``, so the audit log keeps counting."""
    job_id = job.pk if isinstance(job, Job) else job
    try:
        with transaction.atomic():
            row = Job.objects.select_for_update().get(pk=job_id)
            if row.status != Status.FAILED:
                raise InvalidTransition(f"Only a failed job can be retried; job #{row.pk} is {row.status}.")
            row.status = Status.QUEUED
            # The logs of the tries this budget used keep their numbers across the retry.
            TryLog.objects.filter(job_id=row.pk, earlier=TryLog.CURRENT).update(earlier=row.earlier_attempts)
            row.earlier_attempts += row.attempts
            row.attempts = 0
            row.error = ""
            row.message = REQUEUED_BY_ADMIN
            row.run_at = timezone.now()
            row.due_later = False
            row.started_at = row.finished_at = row.heartbeat_at = row.dismissed_at = None
            row.locked_by = None
            row.progress = None
            row.progress_message = ""
            with transaction.atomic():
                row.save()
            if row.step_id is not None:
                workflows.step_retried(row)  # its workflow resumes
            notify([row.queue])
    except IntegrityError:
        raise InvalidTransition(
            f"Job #{job_id} cannot be retried: another {row.type} job with dedupe key "
            f"{row.dedupe_key!r} is already queued or running."
        ) from None
    return row


def retry_many(job_ids: Sequence[int]) -> tuple[int, int]:
    """``retry`` for a batch of failed jobs (``jobs.bulk``): one set-based UPDATE in one
    transaction, the tries' logs stamped as ``retry`` stamps them. Jobs no longer failed are
    left as they are. When a job's dedupe key is held by an active twin, the batch falls back
    to one ``retry`` a job, and those are refused. Returns (retried, left unchanged)."""
    failed = Job.objects.filter(pk__in=list(job_ids), status=Status.FAILED)
    try:
        with transaction.atomic():
            TryLog.objects.filter(job_id__in=failed.values("pk"), earlier=TryLog.CURRENT).update(
                earlier=Subquery(Job.objects.filter(pk=OuterRef("job_id")).values("earlier_attempts")[:1])
            )
            queues = set(failed.values_list("queue", flat=True).distinct())
            retried = failed.update(
                status=Status.QUEUED,
                earlier_attempts=F("earlier_attempts") + F("attempts"),
                attempts=0,
                error="",
                message=REQUEUED_BY_ADMIN,
                run_at=Now(),
                started_at=None,
                finished_at=None,
                heartbeat_at=None,
                dismissed_at=None,
                locked_by=None,
                progress=None,
                progress_message="",
            )
            notify(queues)
    except IntegrityError:  # a twin holds a dedupe key: each job on its own
        retried = 0
        for job_id in job_ids:
            try:
                retry(job_id)
                retried += 1
            except (InvalidTransition, Job.DoesNotExist):
                pass
    return retried, len(job_ids) - retried


def dismiss_many(job_ids: Sequence[int]) -> tuple[int, int]:
    """``dismiss`` for a batch of failed jobs: one UPDATE. Returns (dismissed, left unchanged)."""
    dismissed = Job.objects.filter(
        pk__in=list(job_ids), status=Status.FAILED, dismissed_at__isnull=True
    ).update(dismissed_at=Now(), message=DISMISSED)
    return dismissed, len(job_ids) - dismissed


def dismiss(job: Job | int) -> Job:
    """Take a failed job off its queue's failed list: an operator has seen it and will not
    retry it. It stays failed, with its error and tries, and is pruned once it has been
    dismissed for ``JOBS_KEEP_FINISHED_DAYS``."""
    job_id = job.pk if isinstance(job, Job) else job
    with transaction.atomic():
        row = Job.objects.select_for_update().get(pk=job_id)  # the one row, until dismissed
        if row.status != Status.FAILED:
            raise InvalidTransition(f"Only a failed job can be dismissed; job #{row.pk} is {row.status}.")
        if row.dismissed_at is not None:
            raise InvalidTransition(f"Job #{row.pk} is already dismissed.")
        row.dismissed_at = timezone.now()
        row.message = DISMISSED
        row.save(update_fields=["dismissed_at", "message"])
    return row


# --- recovery and housekeeping ------------------------------------------------------------


@dataclass(frozen=True)
class ReapResult:
    requeued: int = 0
    failed: int = 0


def reap(now: datetime | None = None) -> ReapResult:
    """Take back running jobs whose worker went silent: each counts as a failed try and
    returns after its type's backoff (or fails, with no attempt left).

    A job is silent when its heartbeat is older than ``JOBS_REAP_AFTER``, or when the
    worker holding it stopped updating its registry row for ``JOBS_WORKER_LEASE`` (so the
    jobs a dead worker had prefetched come back as soon as it is known dead).
    """
    now = now or timezone.now()
    heartbeat_before = now - timedelta(seconds=jobs_settings.REAP_AFTER)
    seen_before = now - timedelta(seconds=jobs_settings.WORKER_LEASE)
    reaped = _take_back(lambda: driver().reap(heartbeat_before, seen_before, TAKE_BACK_BATCH))
    # Workflow steps whose job waited for its dedupe key: released once the key is free.
    workflows.release_blocked()
    return reaped


def recover_worker(name: str) -> ReapResult:
    """On start: jobs still marked running under this worker's name cannot be running."""
    return _take_back(lambda: driver().take_back(name, TAKE_BACK_BATCH))


TAKE_BACK_BATCH = 1000  # running jobs taken back in one transaction


def _take_back(lock_running: Callable[[], list[Job]]) -> ReapResult:
    """Each job ``lock_running`` locks (inside this transaction, skipping rows another
    reaper holds) counts as a lost try: queued again after its backoff, or failed."""
    requeued = failed = 0
    queues: set[str] = set()
    lost_tries: list[Finished] = []
    with transaction.atomic():
        jobs = lock_running()
        now = timezone.now()
        for job in jobs:
            tried = _finished(job, now, "")
            worker = job.locked_by or ""
            lost = Failure("WorkerLost", f"Worker {worker} stopped answering.", retryable=True)
            if not retries.retried(job.attempts, job.max_attempts):
                job.status, job.finished_at = Status.FAILED, now
                job.error = job.message = BUDGET_EXHAUSTED
                failed += 1
            else:
                # After the type's backoff, as after any failed try: a job that kills its
                # worker must not go straight on to kill the next one.
                job.status, job.run_at = Status.QUEUED, now + retries.backoff(job.type, job.attempts)
                job.due_later = due_later(job.run_at, now)
                job.message = REQUEUED_AFTER_RESTART
                job.locked_by = None
                requeued += 1
                queues.add(job.queue)
            job.heartbeat_at = None
            job.save(
                update_fields=[
                    "status",
                    "finished_at",
                    "error",
                    "message",
                    "run_at",
                    "due_later",
                    "locked_by",
                    "heartbeat_at",
                ]
            )
            _record_attempt(job, worker, lost)
            lost_tries.append(tried.with_outcome(_outcome_of(job)))
            if job.status == Status.FAILED:
                _failed_for_good(job, f"failed: {BUDGET_EXHAUSTED}")
        notify(queues)
    rollup.record(lost_tries)
    if requeued or failed:
        logger.warning(
            "Reaper took back %d jobs (%d requeued, %d failed).", requeued + failed, requeued, failed
        )
    return ReapResult(requeued, failed)


def prune(older_than: timedelta | None = None, batch_size: int | None = None) -> int:
    """Delete finished jobs older than the retention, in batches; returns how many.

    Succeeded and cancelled jobs count from when they finished. A failed job stays, however
    old, until it is retried or dismissed; a dismissed one counts from its dismissal."""
    if older_than is None:
        older_than = timedelta(days=jobs_settings.KEEP_FINISHED_DAYS)
    batch_size = batch_size or jobs_settings.PRUNE_BATCH
    cutoff = timezone.now() - older_than
    total = driver().prune(finished_before=cutoff, dismissed_before=cutoff, batch_size=batch_size)
    Worker.objects.filter(stopped_at__lt=cutoff).delete()
    workflows.prune(cutoff, batch_size)
    rollup.prune()  # on its own retention; the tries' logs went with their jobs (cascade)
    return total


# --- the tries' logs (``jobs.try_log``) ------------------------------------------------------


def save_try_logs(logs: Sequence[tuple[int, int, Log]]) -> int:
    """Store what each ``(job id, attempt)`` try logged, replacing what was written of it
    while it ran: one statement for the batch. Returns how many were written."""
    now = timezone.now()
    latest = {(job_id, attempt): log for job_id, attempt, log in logs}  # one row per try
    rows = [
        TryLog(job_id=job_id, attempt=attempt, text=log.text, lines=log.lines, cut=log.cut, updated_at=now)
        for (job_id, attempt), log in latest.items()
    ]
    return _upsert_logs(rows)


def save_live_log(job_id: int, attempt: int, text: str) -> int:
    """Store what a running try has logged so far (the supervisor, at the progress interval)."""
    lines = text.count("\n")
    row = TryLog(job_id=job_id, attempt=attempt, text=text, lines=lines, updated_at=timezone.now())
    return _upsert_logs([row])


def _upsert_logs(rows: list[TryLog]) -> int:
    try:
        with transaction.atomic():
            # Where a database names the key of the conflict (PostgreSQL, SQLite) it is the
            # unique (job, earlier, attempt); MariaDB's ON DUPLICATE KEY finds it alone.
            unique = (
                ["job", "earlier", "attempt"]
                if connection.features.supports_update_conflicts_with_target
                else None
            )
            TryLog.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=unique,
                update_fields=["text", "lines", "cut", "updated_at"],
            )
    except IntegrityError:  # a job pruned meanwhile: its log has nowhere to go
        logger.warning("Could not store the logs of %d tries.", len(rows), exc_info=True)
        return 0
    return len(rows)
