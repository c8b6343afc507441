"""The engine's tables: jobs, their failed tries (the audit trail) and the worker registry.

Only fields and small helpers live here; every status change goes through ``jobs.store``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from django.db import models
from django.db.models.functions import Now

from jobs.flow.limits import TYPE_PREFIX
from jobs.flow.rates import Window, with_pending


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
ACTIVE = (Status.QUEUED, Status.RUNNING)


class Priority(models.IntegerChoices):
    """Stored as small integers so the claim index sorts them; lower runs first.

    The column holds minus a ``django.tasks`` priority (-100..100, higher first, 0 by
    default), and the named priorities sit on the same scale: critical = 100, high = 50,
    normal = 0, low = -50 in Django's terms. So a ``@task(priority=75)`` runs after
    critical jobs and before high ones, and both kinds order one queue in one index.
    """

    CRITICAL = -100, "critical"
    HIGH = -50, "high"
    NORMAL = 0, "normal"
    LOW = 50, "low"

    @classmethod
    def named(cls, name: str) -> Priority:
        """The priority called ``name`` (as declared on a job type or given to enqueue)."""
        return cls(priority_number(name))


PRIORITIES: Mapping[str, int] = {member.label: member.value for member in Priority}


def priority_number(name: object) -> int:
    """The stored number of the priority called ``name``, from the names' table (enqueue's
    path: an enum member looked up by value costs some 30 µs, cold); ValueError naming the
    four otherwise."""
    number = PRIORITIES.get(name) if isinstance(name, str) else None
    if number is None:
        raise ValueError(f"Unknown priority {name!r}; use one of {', '.join(PRIORITIES)}.")
    return number


class Job(models.Model):
    type = models.CharField(max_length=100)
    queue = models.CharField(max_length=50)
    # A named priority or minus a django.tasks priority (see Priority): no choices, since
    # any whole number from -100 to 100 is valid.
    priority = models.SmallIntegerField(default=Priority.NORMAL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    payload = models.JSONField(default=dict, blank=True)
    # NULL, not "": the partial unique index ignores jobs without a key.
    dedupe_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    run_at = models.DateTimeField(db_default=Now())
    # Internal, never shown: queued with a run_at that was still ahead when it was written
    # (a delayed enqueue, a retry's backoff, RetryLater, the reaper's take-back). Such a job
    # stays out of the claims' range of the claim indexes until a worker promotes it when
    # it is due (``jobs.store.promote_due``), so a claim never reads past it however many
    # wait. It still reads "queued" everywhere: the API, django.tasks, the admin, metrics.
    due_later = models.BooleanField(default=False, db_default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=3)
    # Tries used before an operator's last Retry (which gives a new budget): the audit log
    # numbers tries from here on, so they keep counting across a retry. A database default,
    # so the engine's own INSERT statements need not name it; no CHECK constraint, so adding
    # the column to a big table changes only the catalogue (a CHECK would scan every row).
    earlier_attempts = models.IntegerField(default=0, db_default=0)
    created_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    locked_by = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL until claimed
    progress = models.SmallIntegerField(null=True, blank=True)
    progress_message = models.CharField(max_length=500, blank=True, default="")
    error = models.TextField(blank=True, default="")
    message = models.CharField(max_length=200, blank=True, default="")
    # What a django.tasks task returned (JSON); NULL for jobs and for tasks that returned None.
    result = models.JSONField(null=True, blank=True)
    # A failed job stays failed (in its queue's failed list) until an operator retries or
    # dismisses it; dismissed, it leaves the failed list and is pruned after the retention.
    dismissed_at = models.DateTimeField(null=True, blank=True)
    # The W3C trace context of the span current at enqueue (``jobs.tracing``), so the tries
    # continue the enqueuer's trace; NULL when tracing is off or no span was current.
    traceparent = models.CharField(max_length=55, null=True, blank=True)  # noqa: DJ001
    # The workflow step this job runs (``jobs.workflow``); NULL for a job of its own. No
    # foreign key in the database: adding the column to a big table then changes only the
    # catalogue, and nothing checks it on the enqueue path. A workflow's pruning clears it.
    step = models.ForeignKey(
        "WorkflowStep",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    # Flow control (``jobs.flow``): the limit keys this job counts against, rendered at
    # enqueue from its type's templates ("repository:7", or "type:<name>" for a type-wide
    # limit); NULL for a job without such a limit. A claim counts the running jobs of a
    # concurrency key from the rows themselves, so a job that ends in any way frees its slot.
    concurrency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    rate_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001

    class Meta:
        db_table = "jobs_job"
        # The admin lists jobs under "Platform → Background jobs", the page operators know.
        verbose_name = "background job"
        verbose_name_plural = "Background jobs"
        permissions = [("view_jobs", "Can view the background jobs page")]
        indexes = [
            # The claim of a one-queue lane (``--queue ai:1``): that queue's next due job by
            # priority, run_at, id, read in index order among the jobs not due later, so
            # the claim starts at the first claimable entry and stops after ``limit``
            # however many jobs wait for a later time. Partial, so a million finished rows
            # add nothing to it; every queued job is in it (the admin's queued list and
            # counts, the metrics read it too).
            models.Index(
                fields=["queue", "due_later", "priority", "run_at", "id"],
                condition=models.Q(status="queued"),
                name="jobs_claim",
            ),
            # The claim of a lane serving several queues (the default lane): the same order
            # across queues, so PostgreSQL reads the first rows instead of sorting them all.
            models.Index(
                fields=["due_later", "priority", "run_at", "id"],
                condition=models.Q(status="queued"),
                name="jobs_claim_any",
            ),
            # The jobs due later, by run_at: a worker's promotion reads those now due from
            # the front, and the moment the next one is due is its first entry. Partial:
            # only a job waiting for a later time has an entry.
            models.Index(
                fields=["run_at"],
                condition=models.Q(status="queued", due_later=True),
                name="jobs_due_later",
            ),
            # Heartbeats (by worker) and the reaper (stale heartbeats): running rows only.
            models.Index(
                fields=["locked_by", "heartbeat_at"],
                condition=models.Q(status="running"),
                name="jobs_running",
            ),
            # Flow control: the claim of the queued jobs that carry a limit key, in claim
            # order, in a queue whose other jobs need no limit (those keep the plain claim,
            # which skips these). Partial: a job without limit keys, or due later, adds no
            # entry.
            models.Index(
                fields=["queue", "priority", "run_at", "id"],
                condition=models.Q(status="queued", due_later=False)
                & (models.Q(concurrency_key__isnull=False) | models.Q(rate_key__isnull=False)),
                name="jobs_claim_keyed",
            ),
            # Flow control: the same jobs in claim order across queues, for the claim of a
            # lane that serves several (the default lane): read from the front, where
            # ``jobs_claim_keyed`` would have every due keyed job of those queues sorted.
            models.Index(
                fields=["priority", "run_at", "id"],
                condition=models.Q(status="queued", due_later=False)
                & (models.Q(concurrency_key__isnull=False) | models.Q(rate_key__isnull=False)),
                name="jobs_claim_keyed_any",
            ),
            # Flow control: the running jobs of a concurrency key, counted by a claim of
            # that key (an index-only probe). Partial: only a running job with a key of its
            # own has an entry. A type-wide key is left out: every running job of the type
            # would hold the same value, and entries of one value cost each claim more
            # than the rare count of them does through ``jobs_running``.
            models.Index(
                fields=["concurrency_key"],
                condition=models.Q(status="running", concurrency_key__isnull=False)
                & ~models.Q(concurrency_key__startswith=TYPE_PREFIX),
                name="jobs_running_key",
            ),
            # The admin page's filter on a rare final status (failed, cancelled), newest
            # first, and its tile count. Partial: a job that succeeds (nearly all of them)
            # adds no entry, which keeps two index writes off every job's claim and ack.
            # The common statuses need no index of their own: queued and running have the
            # partial indexes above, and succeeded rows are most of the table, so a scan in
            # primary-key order finds the newest ones at once.
            models.Index(
                fields=["status", "id"],
                condition=models.Q(status__in=["failed", "cancelled"]),
                name="jobs_rare_status",
            ),
            # The admin page's failed list of one queue (mail's failed list, ?status=failed&
            # queue=mail): its rows newest first and its count, without visiting the heap.
            # Partial: only a job that fails for good adds an entry.
            models.Index(
                fields=["queue", "id"],
                condition=models.Q(status="failed"),
                name="jobs_failed_queue",
            ),
            # The admin page's search by dedupe key (any status: "what happened to email 7?"),
            # and the jobs of a key newest first (``jobs_for``, a record's "Recent jobs", the
            # "last job" column): the id makes that order the index's own, so the newest job
            # of a key is one step into it however many older ones are kept. Partial, so jobs
            # without a key (most of them) cost nothing to insert.
            models.Index(
                fields=["dedupe_key", "id"],
                condition=models.Q(dedupe_key__isnull=False),
                name="jobs_dedupe_key",
            ),
        ]
        constraints = [
            # At most one queued-or-running job per (type, dedupe_key): enqueue relies on it.
            models.UniqueConstraint(
                fields=["type", "dedupe_key"],
                condition=models.Q(status__in=["queued", "running"], dedupe_key__isnull=False),
                name="jobs_dedupe_active",
            ),
            # One job per workflow step, whatever the race: a second release of a step
            # inserts nothing. It also finds a step's job (a workflow's page, its graph).
            # Partial, so a job outside a workflow adds no entry. (MariaDB: a unique index
            # on the column, migration 0014.)
            models.UniqueConstraint(
                fields=["step"], condition=models.Q(step__isnull=False), name="jobs_step_job"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.pk}"

    @property
    def priority_name(self) -> str:
        """The name of a named priority, else the django.tasks priority it stores."""
        if self.priority in Priority.values:
            return Priority(self.priority).label
        return str(-self.priority)

    @property
    def waiting_for_retry(self) -> bool:
        """Queued again after a failed try (or a lost worker): it has used attempts."""
        return self.status == Status.QUEUED and self.attempts > 0

    @property
    def duration(self) -> timedelta | None:
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None


class JobAttempt(models.Model):
    """One failed try of a job (successes are the job row itself): the audit trail."""

    job = models.ForeignKey(Job, on_delete=models.DB_CASCADE, related_name="failed_attempts")
    type = models.CharField(max_length=100)
    # The try's number in the job's whole life: it keeps counting across an operator's
    # Retry (``Job.earlier_attempts + Job.attempts`` when it was recorded).
    attempt = models.PositiveSmallIntegerField()
    worker = models.CharField(max_length=200, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(db_default=Now())
    error_class = models.CharField(max_length=200)
    error = models.TextField(blank=True, default="")
    traceback = models.TextField(blank=True, default="")
    outcome = models.CharField(max_length=10, help_text="What followed: queued (retry) or failed.")

    class Meta:
        db_table = "jobs_attempt"
        ordering = ["job_id", "attempt", "id"]

    def __str__(self) -> str:
        return f"{self.type} #{self.job_id} try {self.attempt}: {self.error_class}"


class TryLog(models.Model):
    """What a handler logged during one try (``jobs.try_log``), bounded; a try that logged
    nothing has no row. Written by the supervisor as the progress is (live, at the progress
    interval) and once more when the try ends; removed with its job (the database cascades).

    ``attempt`` is the claim's (1 for a job's first try after an operator's Retry too); an
    operator's Retry stamps the logs of the budget it ends with the tries used before it
    (``earlier``, -1 while the budget is the job's current one), so a try's number in the
    job's whole life is ``earlier + attempt`` (``Job.earlier_attempts`` while -1)."""

    CURRENT = -1

    # No index of its own: the unique (job, earlier, attempt) index leads with it.
    job = models.ForeignKey(Job, on_delete=models.DB_CASCADE, related_name="try_logs", db_index=False)
    attempt = models.PositiveSmallIntegerField()
    earlier = models.IntegerField(default=CURRENT)
    text = models.TextField(blank=True, default="")
    lines = models.PositiveIntegerField(default=0)
    # Where the log was cut ("" when it was not): the line count or the bytes it reached.
    cut = models.CharField(max_length=200, blank=True, default="")
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "jobs_try_log"
        constraints = [
            models.UniqueConstraint(fields=["job", "earlier", "attempt"], name="jobs_try_log_once"),
        ]

    def __str__(self) -> str:
        return f"log of #{self.job_id} try {self.attempt}"

    def life_attempt(self, earlier_attempts: int) -> int:
        """The try's number across the job's life (``JobAttempt.attempt``'s numbering)."""
        return (earlier_attempts if self.earlier == self.CURRENT else self.earlier) + self.attempt


class Rollup(models.Model):
    """How the tries that finished behaved, summed per span of minutes (1 and 15), queue,
    type and outcome (``jobs.rollup``): one row per bucket of a log-scale histogram of one
    measure (wait: due to started; run: started to finished) holding how many tries fell in
    it. Written once per acknowledgement batch, read by the charts and the Prometheus
    histograms, pruned on its own retention (``JOBS_ROLLUP_KEEP_DAYS``)."""

    # The key is the primary key, the rows of one chart together: span, then queue and type
    # (a queue's rows for all types, or the fleet's: ``jobs.rollup.ALL``), then minute. So a
    # chart reads one range (InnoDB keeps the rows in that order: one sweep).
    pk = models.CompositePrimaryKey("span", "queue", "type", "minute", "outcome", "measure", "bucket")
    span = models.PositiveSmallIntegerField()  # minutes
    minute = models.DateTimeField()  # the span's start
    queue = models.CharField(max_length=50)
    type = models.CharField(max_length=100)
    outcome = models.CharField(max_length=10)  # succeeded, failed, retried
    measure = models.CharField(max_length=1)  # "w" (wait) or "r" (run)
    bucket = models.SmallIntegerField()
    tries = models.BigIntegerField(default=0)

    class Meta:
        db_table = "jobs_rollup"
        indexes = [
            # Pruning (minute < cutoff) and Prometheus' last minutes of every queue. Rows are
            # added, not moved: an update of ``tries`` touches no index.
            models.Index(fields=["minute"], name="jobs_rollup_minute"),
        ]

    def __str__(self) -> str:
        return f"{self.minute:%Y-%m-%d %H:%M} {self.queue} {self.type} {self.outcome}"


class QueueDepth(models.Model):
    """A queue's depth at one minute (due and running jobs), sampled by one worker of the
    fleet a minute (``jobs.rollup.sample_depth``); the row of queue "" marks the minute as
    taken. Pruned with the rollup."""

    pk = models.CompositePrimaryKey("minute", "queue")
    minute = models.DateTimeField()
    queue = models.CharField(max_length=50)
    due = models.IntegerField(default=0)
    running = models.IntegerField(default=0)

    class Meta:
        db_table = "jobs_queue_depth"

    def __str__(self) -> str:
        return f"{self.minute:%Y-%m-%d %H:%M} {self.queue}"


class Worker(models.Model):
    """One row per ``runworker`` process; ``last_seen`` is its heartbeat."""

    name = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=200)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    started_at = models.DateTimeField(db_default=Now())
    last_seen = models.DateTimeField(db_default=Now())
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "jobs_worker"

    def __str__(self) -> str:
        return self.name


# --- flow control (``jobs.flow``) -------------------------------------------------------------


class Queue(models.Model):
    """An operator's say over one queue: paused or not, and the limits that replace those
    of ``JOBS_QUEUES`` once set. Workers read these rows at most once per poll interval."""

    queue = models.CharField(max_length=50, unique=True)
    paused = models.BooleanField(default=False, help_text="Paused: no job of the queue starts.")
    # Whether the limits below are in force, in place of the settings' (none set: none).
    limits_set = models.BooleanField(default=False)
    concurrency = models.PositiveIntegerField(null=True, blank=True, help_text="Jobs running at once.")
    rate = models.CharField(max_length=20, blank=True, default="", help_text="Starts per period: 60/m.")
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "jobs_queue"
        ordering = ["queue"]
        verbose_name = "queue"

    def __str__(self) -> str:
        return self.queue


class FlowGate(models.Model):
    """One limit key's gate: a claim of jobs of the key locks its row for the claim's
    transaction, so two claimers cannot both take its last slot; a rate key keeps its
    recent starts here (``jobs.flow.rates.Window``). Nothing is held while a job runs."""

    key = models.CharField(max_length=255, primary_key=True)
    recent = models.TextField(blank=True, default="")
    # What the gate's type or queue limits surely still allow, reckoned by the last claim
    # that counted (``jobs.flow.spare``): a claim within them takes its jobs in one
    # statement, without counting. Void when ``spare_basis`` is not the limits in force,
    # or after ``spare_until`` (µs of the database's clock).
    spare_slots = models.IntegerField(null=True, blank=True)
    spare_starts = models.IntegerField(null=True, blank=True)
    spare_until = models.BigIntegerField(null=True, blank=True)
    spare_basis = models.CharField(max_length=100, blank=True, default="")
    # The starts those claims took in the latest grain of the rate window, not yet moved
    # into ``recent`` (``jobs.flow.rates.with_pending``): two integers to add to, where the
    # window's text would be parsed and written at every claim.
    spare_pending_at = models.BigIntegerField(null=True, blank=True)
    spare_pending = models.IntegerField(null=True, blank=True)
    # The type's leases in force (``jobs.flow.leases``): jobs a worker may take of the type
    # without this row, each lease counted as running until its end. JSON text.
    leases = models.TextField(blank=True, default="")

    class Meta:
        db_table = "jobs_flow_gate"

    def __str__(self) -> str:
        return self.key

    def window(self) -> Window:
        """Its rate window's recent starts, the pending pair among them."""
        return Window.load(with_pending(self.recent, self.spare_pending_at, self.spare_pending, self.leases))


# --- timers (``jobs.timetable``) -----------------------------------------------------------


class Timer(models.Model):
    """One ``@periodic`` timer: its schedule, policies and state. Installed from the code's
    declarations (``jobs.timetable.install``), like permissions; an operator may change its
    interval and pause it, not what it runs."""

    name = models.CharField(max_length=100, unique=True)
    # The interval in force (seconds) and the one the code declares: they differ once an
    # operator changed it, and a later declaration then leaves the operator's in place.
    every = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds between slots.")
    declared_every = models.PositiveIntegerField(null=True, blank=True)
    cron = models.CharField(max_length=100, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC")
    catch_up = models.CharField(max_length=4, default="once")
    overlap = models.CharField(max_length=5, default="skip")
    enabled = models.BooleanField(default=True, help_text="Off: paused, no slot is booked.")
    declared = models.BooleanField(default=True, help_text="Still declared in the code.")
    # The start of its history: slots before it are not missed.
    installed_at = models.DateTimeField()
    # The newest slot booked (scheduled or caught up): the next booking starts after it.
    last_slot = models.DateTimeField(null=True, blank=True)
    last_success_slot = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    missed = models.PositiveIntegerField(default=0, help_text="Slots that got no run of their own.")
    skipped = models.PositiveIntegerField(default=0, help_text="Slots skipped: the previous run still ran.")

    class Meta:
        db_table = "jobs_timer"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TimerSlot(models.Model):
    """One slot of a timer that was booked: run by a job, run by a command (cron, django-q2),
    skipped or missed. The unique (timer, slot) pair is what makes a slot run once across
    the fleet, whoever books it and whenever; a job's dedupe key lasts only while it runs."""

    class Kind(models.TextChoices):
        SCHEDULED = "scheduled"
        CATCH_UP = "catch_up", "catch-up"
        MANUAL = "manual"

    class Outcome(models.TextChoices):
        ENQUEUED = "enqueued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        SKIPPED = "skipped"
        MISSED = "missed"

    # No index of its own: the unique (timer, slot) index leads with it.
    timer = models.ForeignKey(Timer, on_delete=models.DB_CASCADE, related_name="slots", db_index=False)
    slot = models.DateTimeField()
    kind = models.CharField(max_length=9, choices=Kind.choices, default=Kind.SCHEDULED)
    outcome = models.CharField(max_length=9, choices=Outcome.choices, default=Outcome.ENQUEUED)
    # The run's job; NULL for a command's run, a skipped or missed slot, or once the job
    # was pruned (the outcome and times below stay).
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.DB_SET_NULL, related_name="+")
    covers = models.PositiveIntegerField(default=1, help_text="Slots this row stands for.")
    created_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    ran_in = models.CharField(max_length=200, blank=True, default="", help_text="A command's run: where.")
    by = models.CharField(max_length=150, blank=True, default="", help_text="Who asked for a manual run.")
    result = models.TextField(blank=True, default="")

    class Meta:
        db_table = "jobs_timer_slot"
        ordering = ["timer", "-slot"]
        constraints = [
            # Each slot of a timer once: the booking and every command insert under it.
            models.UniqueConstraint(fields=["timer", "slot"], name="jobs_timer_slot_once"),
        ]
        indexes = [
            # The overlap policy's question, "does an earlier run of this timer still run?":
            # the timer's slots whose run has not ended (a handful), not its whole history.
            models.Index(fields=["timer", "outcome"], name="jobs_timer_slot_outcome"),
        ]

    def __str__(self) -> str:
        return f"{self.timer_id} @ {self.slot:%Y-%m-%d %H:%M:%S}"


# --- workflows (``jobs.workflow``) ----------------------------------------------------------


class Workflow(models.Model):
    """Steps (jobs of declared types) and the order they run in: chains and groups. Its
    progress commits with each step's completion (``jobs.workflow.progress``)."""

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    name = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    # NULL, not "": the partial unique index ignores workflows without a key.
    dedupe_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    steps = models.PositiveIntegerField(default=0, help_text="Steps in the workflow.")
    # Steps not succeeded yet: the step whose success brings it to zero ends the workflow.
    unfinished = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)
    # The W3C trace context current at ``jobs.start`` (``jobs.tracing``): every step's job
    # is inserted with it, so the steps' tries continue the trace that started the
    # workflow. NULL when tracing is off or no span was current.
    traceparent = models.CharField(max_length=55, null=True, blank=True)  # noqa: DJ001

    class Meta:
        db_table = "jobs_workflow"
        ordering = ["-id"]
        indexes = [
            # The Workflows page filtered by status, newest first.
            models.Index(fields=["status", "id"], name="jobs_workflow_status"),
            # The workflows of a key, newest first (``jobs.workflows_for``, the search).
            models.Index(fields=["dedupe_key", "id"], name="jobs_workflow_key"),
        ]
        constraints = [
            # At most one running workflow per (name, dedupe_key): ``jobs.start`` relies on
            # it. (MariaDB: a generated column and a unique index, migration 0014.)
            models.UniqueConstraint(
                fields=["name", "dedupe_key"],
                condition=models.Q(status="running", dedupe_key__isnull=False),
                name="jobs_workflow_running_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.pk}"

    @property
    def succeeded_steps(self) -> int:
        return self.steps - self.unfinished


class WorkflowStep(models.Model):
    """One step of a workflow: the job it becomes once every step it waits for succeeded.

    Its job row is inserted only then (``released``), so the claim, the dedupe index and
    the limits see an ordinary job; until then the step holds what the job will be."""

    class Status(models.TextChoices):
        WAITING = "waiting"  # for ``pending`` upstream steps
        RELEASED = "released"  # its job is queued or running (or waits for its dedupe key)
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    workflow = models.ForeignKey(Workflow, on_delete=models.DB_CASCADE, related_name="+", db_index=False)
    # Its number in the workflow (1, 2, …, in the order the flow lists the steps).
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    # What its job will be, checked when the workflow was started (``jobs.validation``).
    type = models.CharField(max_length=100)
    queue = models.CharField(max_length=50)
    priority = models.SmallIntegerField(default=Priority.NORMAL)
    payload = models.JSONField(default=dict, blank=True)
    dedupe_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    # Its job's flow-control keys, rendered as enqueue renders them (``jobs.flow.limits``):
    # the claim holds a step's job to its type's limits as any job.
    concurrency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    rate_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    max_attempts = models.PositiveSmallIntegerField(default=3)
    delay = models.FloatField(null=True, blank=True, help_text="Seconds from its release to its run.")
    # The keyword its handler gets the upstream results under ("" for ``ctx`` only).
    results_as = models.CharField(max_length=50, blank=True, default="")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    # Upstream steps not succeeded yet: released when it reaches zero.
    pending = models.PositiveIntegerField(default=0)
    # Its column in the workflow's graph: every upstream step's is smaller.
    depth = models.PositiveIntegerField(default=0)
    # What its handler returned (JSON), for the steps that wait for it.
    result = models.JSONField(null=True, blank=True)
    message = models.CharField(max_length=200, blank=True, default="")
    # The step that added it while it ran (``ctx.add_steps``); NULL for a step started with
    # the workflow.
    added_by = models.BigIntegerField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "jobs_workflow_step"
        ordering = ["workflow", "position"]
        constraints = [
            # Names a step in ``ctx.upstream_results``; a step added again under its name
            # (a plain step that added it and was retried) is not added twice.
            models.UniqueConstraint(fields=["workflow", "name"], name="jobs_workflow_step_name"),
        ]
        indexes = [
            # A workflow's graph: its columns in order, each column's first steps.
            models.Index(fields=["workflow", "depth", "position"], name="jobs_workflow_step_graph"),
            # The released steps whose job waits for its dedupe key (``release_blocked``).
            models.Index(fields=["status"], name="jobs_workflow_step_status"),
        ]

    def __str__(self) -> str:
        return f"step #{self.position} {self.name} of workflow #{self.workflow_id}"


class WorkflowEdge(models.Model):
    """``downstream`` waits for ``upstream`` to succeed."""

    pk = models.CompositePrimaryKey("upstream", "downstream")
    # No index of its own: the primary key leads with it (a step's successors).
    upstream = models.ForeignKey(WorkflowStep, on_delete=models.DB_CASCADE, related_name="+", db_index=False)
    # A step's upstream steps (their results; the graph).
    downstream = models.ForeignKey(WorkflowStep, on_delete=models.DB_CASCADE, related_name="+")

    class Meta:
        db_table = "jobs_workflow_edge"

    def __str__(self) -> str:
        return f"{self.upstream_id} → {self.downstream_id}"
