"""The one interface between the engine's policy (``jobs.store``) and a database.

Every statement that depends on the database the engine runs on is a verb of ``Driver``,
implemented once per database (``jobs.drivers.postgres``, ``jobs.drivers.mariadb``,
``jobs.drivers.sqlite``); ``jobs.drivers.driver()`` picks the one for a connection. The
store decides what a verb means (which transition applies, the fence, the backoff); the
driver only says how its database does it, in as few statements as it can.

A driver is bound to a database alias, not to a connection: Django keeps one connection
per alias and thread, so one driver serves every thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:  # the engine's package imports this before Django's apps are ready
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models import Q

    from jobs.models import Job

#: A wake-up notice that a queue's new due jobs carry no limit keys, before the queue's
#: name (``plain:default``): a worker takes them by the plain claim alone. A bare queue
#: name may mean keyed jobs too (a driver that cannot tell sends that).
PLAIN_JOBS_NOTICE = "plain:"
#: The other way round (``keyed:default``): every new due job carries a limit key, so a
#: worker tries the claim of keyed jobs alone (the plain claim of a mixed queue would read
#: past every keyed job waiting in it to find none).
KEYED_JOBS_NOTICE = "keyed:"


#: ``ClaimedJob.try_fields``: priority, run_at, created_at, started_at (µs), tried.
TryFields = tuple[int, int, int, int, bool]


class ClaimedJob(NamedTuple):
    """A claimed job as the worker needs it: no model instance in the hot loop."""

    id: int
    type: str
    payload: str  # JSON text, parsed by the child process that runs it
    attempt: int
    max_attempts: int
    queue: str  # the row's, which a lane's fair share counts by
    step: int | None = None  # the workflow step it runs (``jobs.workflow``), or None
    # Claimed near a concurrency limit (``jobs.flow.admission``): from its claim it takes a
    # slot another worker may want, so it went to an idle child, runs alone, and its end
    # wakes the workers waiting for the slot.
    held: bool = False
    # What its try reads of its row, brought by the claim for a type that asked for it
    # (``Driver.claim``'s ``with_rows``): priority, run_at, created_at and started_at (µs
    # since the epoch) and whether it has failed tries; None where the claim did not.
    try_fields: TryFields | None = None


class Done(NamedTuple):
    """A job an acknowledgement marked succeeded, with what the rollup needs of it
    (``jobs.rollup``): its queue and type, and its try's times in seconds."""

    id: int
    queue: str
    type: str
    waited: float | None  # from due (run_at) to started
    ran: float | None  # from started to finished


#: One row of the rollup's upsert: span (minutes), the span's start, queue, type, outcome,
#: measure ("w" wait, "r" run), bucket, and how many tries to add to it.
RollupRow = tuple[int, datetime, str, str, str, str, int, int]


@dataclass(frozen=True)
class Batch:
    """Many jobs of one type for ``Driver.insert_many``: one payload (JSON text) and one
    dedupe key (or None) per job, every value already checked (``jobs.validation``); for a
    type with flow limits, one (concurrency key, rate key) pair per job."""

    type: str
    queue: str
    priority: int
    max_attempts: int
    run_at: datetime | None
    payloads: Sequence[str]
    dedupe_keys: Sequence[str | None]
    traceparent: str | None = None  # the enqueuer's trace context (``jobs.tracing``)
    due_later: bool = False  # run_at is still ahead: the jobs wait for a promotion
    limit_keys: Sequence[tuple[str | None, str | None]] | None = None

    def concurrency_keys(self) -> list[str | None]:
        return [keys[0] for keys in self.limit_keys] if self.limit_keys else [None] * len(self.payloads)

    def rate_keys(self) -> list[str | None]:
        return [keys[1] for keys in self.limit_keys] if self.limit_keys else [None] * len(self.payloads)


class Candidate(NamedTuple):
    """A due job a flow-controlled claim locked (``FlowTransaction.candidates``), with the
    limit keys stored on its row (``jobs.flow.admission``)."""

    id: int
    type: str
    queue: str
    concurrency_key: str | None
    rate_key: str | None


class Running(NamedTuple):
    """What ``FlowTransaction.lock_and_count`` read under a claim's gate locks: the database's clock
    (µs since the epoch) and the running jobs per concurrency key and per queue."""

    now: int
    keys: dict[str, int]
    queues: dict[str, int]


class Promoted(NamedTuple):
    """What one promotion of jobs due later did (``Driver.promote_due``)."""

    promoted: int  # jobs made claimable
    queues: list[str]  # their queues, each once
    # Seconds until the next job due later (of those left) is due, by the database's clock:
    # zero or less when one is due already, None when none waits.
    next_due_in: float | None


class StepRow(NamedTuple):
    """One workflow step for ``Driver.insert_steps``, every value already checked
    (``jobs.workflow.flow``); ``payload`` is JSON text."""

    position: int
    name: str
    type: str
    queue: str
    priority: int
    payload: str
    dedupe_key: str | None
    max_attempts: int
    delay: float | None
    results_as: str
    status: str
    pending: int
    depth: int
    # Its job's flow-control keys (``jobs.flow.limits``), copied onto the job at release.
    concurrency_key: str | None = None
    rate_key: str | None = None


class TaskRow(NamedTuple):
    """The fields a django.tasks task's result is built from, JSON still as text."""

    id: int
    type: str
    queue: str
    priority: int
    status: str
    payload: str
    run_at: datetime
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    locked_by: str | None
    result: str | None
    tried: bool  # whether the job has failed tries (rows in jobs_attempt)


class TaskTryRow(NamedTuple):
    """What a django.tasks task's try needs of its row beyond what its claim brought (its
    type, payload, attempt and worker): the rest of the ``TaskResult`` its signals carry."""

    id: int
    queue: str
    priority: int
    run_at: datetime
    created_at: datetime
    started_at: datetime | None
    tried: bool  # whether the job has failed tries (rows in jobs_attempt)


class Locks(NamedTuple):
    """What ``FlowTransaction.lock_and_count`` locks and counts: gates, concurrency keys,
    queues."""

    gates: Sequence[str]
    keys: Sequence[str]
    queues: Sequence[str]


class Taken(NamedTuple):
    """What ``FlowTransaction.take`` marked running, before the store admitted it: each job
    as a candidate and as claimed (in claim order), the locked gates' recent starts, and
    the counts read under their locks, whose clock is the one the jobs were started at."""

    candidates: list[Candidate]
    jobs: list[ClaimedJob]
    recent: dict[str, str]
    running: Running


class GateSave(NamedTuple):
    """What a round of a flow-controlled claim writes to a gate it locked: its rate window
    (``jobs.flow.rates.Window``, as text) and what its type's or queue's limits surely
    still allow (``jobs.flow.spare``; none for a per-key gate)."""

    recent: str
    spare_slots: int | None = None
    spare_starts: int | None = None
    spare_until: int | None = None  # µs of the database's clock
    spare_basis: str = ""
    leases: str | None = None  # the type's leases (``jobs.flow.leases``); None: as stored


class Leased(NamedTuple):
    """A claim under a lease (``jobs.flow.leases``): only due jobs of ``type`` that store
    these limit keys, and only while the database's clock is before ``until``."""

    type: str
    concurrency_key: str | None
    rate_key: str | None
    until: datetime


class SparedPlan(NamedTuple):
    """A claim within the gates' spares (``Driver.flow_take_spared``): up to ``limit`` due
    jobs of ``queues`` for ``worker``, leaving out the keys known to be full or waiting
    (``keyed_only``: only the jobs with limit keys), as ``FlowTransaction.candidates``
    picks them; and what it holds them to: the type and queue gates it locks, each with the
    limits in force (``basis``) and its rate's period in seconds (None: no rate), and the
    kinds of job it may take: each type with the limit keys its rows must store (those of
    a type without limits: none). A due job of another kind, or storing other keys, makes
    the claim count instead."""

    worker: str
    queues: Sequence[str]
    limit: int
    full_keys: Sequence[str]
    waiting_keys: Sequence[str]
    keyed_only: bool
    gates: Sequence[str]
    bases: Sequence[str]
    periods: Sequence[int | None]
    types: Sequence[str]
    concurrency_keys: Sequence[str | None]
    rate_keys: Sequence[str | None]


class FlowTransaction(Protocol):
    """The steps of one round of a flow-controlled claim, in its transaction, in this order;
    the store decides between the second and the third (``jobs.flow.admission``). Or, where
    the driver offers it, ``take`` and then ``finish`` with no ids: a round that expects room
    for every job takes them at once and is rolled back if one had none."""

    @property
    def takes(self) -> bool:
        """Whether this driver offers ``take``."""
        ...

    def take(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool,
        first: Locks,
    ) -> Taken:
        """``lock_and_count(*first)``, then the jobs ``candidates`` would lock marked
        running under ``worker`` at once, as ``finish`` marks them, all started at the
        clock ``Running.now`` says; in one round trip where the database allows. The store
        admits them afterwards, and ends the round (``end``) if one was not admitted."""
        ...

    def end(self) -> None:
        """Roll back what the round did so far (with ``takes``): the next step begins anew."""
        ...

    def candidates(
        self,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool = False,
        first: Locks | None = None,
    ) -> tuple[list[Candidate], dict[str, str], Running | None]:
        """Lock up to ``limit`` due queued jobs of ``queues`` in claim order, skipping rows
        another session holds and jobs whose concurrency key is in ``full_keys`` or whose
        rate key is in ``waiting_keys``. With ``keyed_only``, only jobs that carry a limit
        key (``jobs_claim_keyed``). With ``first``, before the candidates (in the same round
        trip where the database allows): ``lock_and_count(*first)``, whose answer comes
        back with them (else ``{}`` and None)."""
        ...

    def lock_and_count(
        self, gates: Sequence[str], keys: Sequence[str], queues: Sequence[str]
    ) -> tuple[dict[str, str], Running]:
        """Lock the gate rows of ``gates``, waiting for another claim of the same keys to
        end, in key order (so two claims never wait on each other in a circle), and then, by
        a statement of its own (which sees every claim of those keys that committed before
        the locks were granted), read the database's clock and the running jobs of each
        concurrency key in ``keys`` and of each queue in ``queues``. Each locked gate's
        recent starts (``jobs.flow.rates.Window``); a key without a gate row is left out."""
        ...

    def finish(
        self,
        worker: str,
        ids: Sequence[int],
        at: datetime | None,
        rekeyed: Mapping[int, tuple[str | None, str | None]],
        gates: Mapping[str, GateSave],
    ) -> list[ClaimedJob]:
        """Mark the locked jobs ``ids`` running under ``worker`` as ``claim`` does, started
        at ``at`` (the clock ``lock_and_count`` read; None: now), storing first the limit
        keys of those in ``rekeyed``; store what ``gates`` says of the locked gates; commit.
        The jobs in the order of ``ids``."""
        ...


class Subscription(Protocol):
    """A session listening for the enqueue notices (``Driver.listen``)."""

    @property
    def closed(self) -> bool: ...

    def fileno(self) -> int: ...

    def drain(self) -> set[str]:
        """Queues named in the notices received so far (never blocks)."""
        ...


class Driver(Protocol):
    """The verbs of one database. Each runs on the driver's alias, inside the caller's
    transaction when there is one."""

    #: Django's name for the database (``connection.vendor``).
    vendor: str
    #: The alias whose connections this driver uses.
    alias: str
    #: Whether ``notify`` reaches ``listen``ing workers (else workers poll).
    listens: bool

    # --- sessions ---

    def is_conflict(self, error: BaseException) -> bool:
        """Whether ``error`` is a lock conflict (a deadlock, a lock wait timed out): the
        database rolled the transaction back and is there, so the work may be tried again
        at once. Any other error of the database may mean it cannot be reached."""
        ...

    def prepare_session(self, connection: BaseDatabaseWrapper) -> None:
        """Set up a new session of any process (on ``connection_created``)."""
        ...

    def prepare_supervisor_session(self, connection: BaseDatabaseWrapper) -> None:
        """Set up a new session of a worker's supervisor (which only moves claimed jobs)."""
        ...

    def session_mismatch(self) -> tuple[str, str] | None:
        """(the session's, the tables') when a session compares text in another collation
        than the engine's tables hold it in (MariaDB); None when they agree, or where the
        database has no such setting."""
        ...

    def upkeep_off(self) -> str | None:
        """What of the database's own upkeep the engine's tables go without, in words
        (PostgreSQL's autovacuum, off for the server or for ``jobs_job``: the dead rows of
        finished jobs stay, the statistics the claims are planned by go stale); None where
        it runs, or where the database has none to turn off."""
        ...

    # --- enqueue ---

    def insert_one(self, fields: Mapping[str, Any], payload_text: str) -> Job | None:
        """Insert one queued job (``fields`` are the model's, ``payload_text`` its payload
        as JSON); None when an active job of its type holds its dedupe key."""
        ...

    def insert_many(self, batch: Batch) -> int:
        """Insert a batch of queued jobs, skipping those whose dedupe key is active (or
        repeats an earlier one's); returns how many were added."""
        ...

    # --- claim and finish ---

    def claim(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        *,
        unkeyed: bool = False,
        with_rows: Sequence[str] = (),
        leased: Leased | None = None,
    ) -> list[ClaimedJob]:
        """Mark up to ``limit`` due queued jobs of ``queues`` running under ``worker`` (one
        more attempt each), skipping rows another session holds; in claim order. With
        ``unkeyed``, only jobs without limit keys (the others go through flow control); with
        ``leased``, only the jobs a lease covers, and none once it ended.
        ``with_rows``: types whose tries read their rows (django.tasks tasks); a driver may
        bring what they read with their jobs (``ClaimedJob.try_fields``) or leave it to
        ``task_try_rows``."""
        ...

    def promote_due(self, limit: int) -> Promoted:
        """Make up to ``limit`` queued jobs due later whose run_at has come claimable
        (earliest first, skipping rows another session holds), waking the idle workers of
        their queues where the database notifies; with the seconds until the next job due
        later is due, by the database's clock. A worker calls it outside any transaction,
        so its locks last one short transaction."""
        ...

    def complete_many(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None
    ) -> list[Done]:
        """Mark ``(id, attempt)`` pairs succeeded, each only while it is still running under
        ``worker`` and that attempt (with its result, JSON text, when ``results`` is given);
        returns the jobs that applied, with their queue, type and times (``Done``)."""
        ...

    def set_state_if_running(self, worker: str, job_id: int, attempt: int, **changes: Any) -> bool:
        """Apply ``changes`` to the job only while it is running under ``worker`` and
        ``attempt`` (the fence); whether it applied."""
        ...

    def lock_if_running(self, worker: str, job_id: int, attempt: int) -> Job | None:
        """The job, locked until the caller's transaction ends, while it is running under
        ``worker`` and ``attempt``; None when it no longer is."""
        ...

    # --- flow control (``jobs.flow``): the claim of jobs with limits ---

    def flow_transaction(self) -> AbstractContextManager[FlowTransaction]:
        """One round of a flow-controlled claim (``jobs.store.claim_flowed``): a short
        transaction, committed by ``FlowTransaction.finish``, rolled back on an error (and
        ended, changing nothing, when the block ends without ``finish``)."""
        ...

    def flow_take_spared(self, plan: SparedPlan) -> list[ClaimedJob] | None:
        """The ``plan``'s jobs marked running under its worker, if the spares of its gates
        cover them all: each gate locked, its spares lowered and its rate window given
        their starts. None, nothing taken, when they do not (or the driver
        does not claim this way): the caller's round then counts."""
        ...

    def flow_add_gates(self, keys: Sequence[str]) -> None:
        """Make sure each limit key has its gate row, in a short transaction of its own
        (never inside a claim: a twin's insert would wait on the claim's locks)."""
        ...

    def flow_prune_gates(self, keep: Callable[[str, str], bool], batch_size: int) -> int:
        """Delete the gates that no claim holds and that ``keep(key, recent)`` lets go, in
        batches of short transactions; how many."""
        ...

    # --- workflows (``jobs.workflow.progress``) ---

    def insert_steps(self, workflow_id: int, rows: Sequence[StepRow], added_by: int | None) -> list[int]:
        """Insert the workflow's steps (``added_by``: the running step that adds them, or
        None); their ids, in the order of ``rows``. A few statements whatever their number."""
        ...

    def insert_edges(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Insert (upstream, downstream) edges between steps, in a few statements."""
        ...

    # Every release inserts a step's job with its step's values and its workflow's
    # ``traceparent`` (``jobs.tracing``), copied in the same statement.

    def release_workflow(self, workflow_id: int) -> int:
        """Insert the job of each released step of the workflow (its first steps, as it
        starts), skipping a step whose dedupe key an active job holds; how many were added."""
        ...

    def release_steps(self, step_ids: Sequence[int]) -> int:
        """Insert the jobs of these released steps that have none, skipping those whose
        dedupe key an active job still holds; how many were added."""
        ...

    def release_successors(self, step_id: int) -> int:
        """One upstream step fewer for every step that waits for ``step_id`` (which just
        succeeded), and the job of each waiting one that waits for none any more inserted:
        a fixed number of statements, whatever the number of successors; how many jobs
        were added."""
        ...

    def cancel_below(self, step_ids: Sequence[int], message: str) -> int:
        """Cancel, with ``message``, every waiting step downstream of ``step_ids``, however
        far; how many."""
        ...

    def restore_below(self, step_id: int) -> int:
        """Put every cancelled step downstream of ``step_id`` back to waiting; how many."""
        ...

    # --- recovery and housekeeping ---

    def reap(self, heartbeat_before: datetime, seen_before: datetime, limit: int) -> list[Job]:
        """Running jobs whose heartbeat is older than ``heartbeat_before`` or whose worker
        was last seen before ``seen_before``, locked for the caller's transaction and
        skipping rows another session holds (two reapers split the rows)."""
        ...

    def take_back(self, worker: str, limit: int) -> list[Job]:
        """The jobs still marked running under ``worker``, locked as ``reap`` locks them."""
        ...

    def prune(self, finished_before: datetime, dismissed_before: datetime, batch_size: int) -> int:
        """Delete succeeded and cancelled jobs finished before ``finished_before`` and
        failed ones dismissed before ``dismissed_before``, in batches of ``batch_size``,
        each its own short transaction; returns how many."""
        ...

    def done(self, job_ids: Sequence[int]) -> list[Done]:
        """These jobs as ``complete_many`` returns them (an atomic job's own success)."""
        ...

    def add_to_rollup(self, rows: Sequence[RollupRow]) -> None:
        """Add each row's count to its rollup row (``jobs.rollup``), creating the rows that do
        not exist yet: one statement, locking the rows in the order given."""
        ...

    def rollup_figures(
        self,
        span: int,
        since: datetime,
        queue: str,
        fractions: tuple[float, float],
        outcomes: tuple[str, str, str],
    ) -> list[tuple[datetime, str, int, int, int, tuple[int, int, int]]]:
        """Per span start (from ``since``) and measure of the rollup's rows of ``queue`` and
        every type (``jobs.rollup.ALL``; ``queue`` too is ALL for the whole fleet):
        the tries counted, the buckets where the running total reaches each fraction, and
        the tries of each of the three outcomes."""
        ...

    # --- wake-up ---

    def notify(self, queues: Sequence[str]) -> None:
        """Wake the idle workers of ``queues`` at commit (a no-op where workers poll)."""
        ...

    def listen(self, connection: BaseDatabaseWrapper) -> Subscription:
        """Subscribe ``connection`` (a session of its own, autocommit) to the notices."""
        ...

    # --- timers ---

    def try_lock_steps(
        self, session: BaseDatabaseWrapper, names: Sequence[str]
    ) -> AbstractContextManager[bool]:
        """Every lock of the timer steps ``names`` at once, taken without waiting on
        ``session`` (a connection of its own), or none (False) when one is held elsewhere;
        held until the context ends."""
        ...

    # --- reads ---

    def task_rows(self, job_ids: Sequence[int]) -> list[TaskRow]:
        """The rows of these jobs (ids without a row are left out), in one statement where
        the database allows."""
        ...

    def task_try_rows(self, job_ids: Sequence[int]) -> list[TaskTryRow]:
        """What the tries about to start of these claimed jobs read of their rows (ids
        without a row are left out), in one statement: a worker's child reads those of a
        batch before running it."""
        ...

    def newest_of_keys(self, dedupe_keys: Sequence[str], types: Sequence[str]) -> Q:
        """A filter matching the newest job of each key among these types."""
        ...

    def due(self, now: datetime) -> Q:
        """A filter matching the queued jobs whose run_at has come by ``now`` (those due
        later whose time has come but that no worker has promoted yet included), in the form
        the claim indexes and the index of jobs due later serve, so that jobs due later
        cost nothing: the due counts of the depth samples, the metrics (a fleet scaled to
        nothing still sees its backlog) and flow control's page."""
        ...

    def failed(self) -> Q:
        """A filter matching the failed jobs, in the form the failed lists' indexes serve
        (the admin's failed list, its tile and its bulk actions)."""
        ...

    def estimate_rows(self, status: str) -> int:
        """The planner's estimate of the jobs in ``status`` (0 where there is none)."""
        ...

    def metrics_snapshot(self, timeout_ms: int) -> AbstractContextManager[None]:
        """One read-only consistent snapshot with a statement timeout, for the metrics'
        statements run inside it; nothing where the database cannot (or a transaction is
        already open)."""
        ...
