"""The only code that changes a workflow's or a step's state, one function per moment:
start, a step's success (and the release of the steps that follow), its failure for good,
its retry, a workflow's cancel and retry, steps added while one runs, steps waiting for a
dedupe key, pruning. The SQL that depends on the database is the driver's.

The store calls the step moments in the transaction of the job's own transition (its
fenced completion, its failure for good, its cancel, its retry), so the two commit
together or not at all. Every transition of a workflow takes its row (the first lock
after the step's job row, before any step row), so the transitions of one workflow apply
one after the other and never deadlock with one another.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, Exists, F, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Now

from jobs import tracing, validation
from jobs.drivers import driver
from jobs.drivers.protocol import StepRow
from jobs.errors import InvalidJobOption, InvalidTransition
from jobs.models import Job, Status, Workflow, WorkflowEdge, WorkflowStep
from jobs.workflow import flow as flows
from jobs.workflow.flow import Flow, Plan

RUNNING = Workflow.Status.RUNNING
STEP = WorkflowStep.Status
#: Steps ``release_blocked`` looks at in one pass.
BLOCKED_BATCH = 1_000
NAME_LENGTH = 100
CANCELLED = "Cancelled."
STEP_CANCELLED = "The workflow was cancelled."


def _fit(text: str, length: int = 200) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


# --- start ----------------------------------------------------------------------------------


def start(flow: Flow, *, name: str | None = None, dedupe_key: str | None = None) -> Workflow:
    """Write the workflow, its steps and edges, and the jobs of its first steps, in the
    caller's transaction. With a dedupe key, a running workflow of the same name and key
    is returned instead (the database's unique index decides races). The workflow keeps the
    trace context current now (``jobs.tracing``); every job of its steps is inserted with it."""
    laid = flows.plan(flow)
    name = _workflow_name(name, laid)
    key = validation.dedupe_key(dedupe_key)
    parent = tracing.traceparent()
    with transaction.atomic():
        for _ in range(5):
            workflow = _insert_workflow(name, key, len(laid.steps), parent)
            if workflow is not None:
                break
            existing = Workflow.objects.filter(name=name, dedupe_key=key, status=RUNNING).first()
            if existing is not None:
                return existing
        else:
            raise IntegrityError(f"Could not start workflow {name!r} with dedupe key {key!r}.")
        _insert_steps(workflow.pk, laid, first=1, depth=0, added_by=None)
        driver().release_workflow(workflow.pk)
    return workflow


def _workflow_name(name: str | None, laid: Plan) -> str:
    if name is None:
        return laid.steps[0].step.type
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_LENGTH:
        raise InvalidJobOption(
            f"A workflow's name is text of 1 to {NAME_LENGTH} characters, got {name!r:.60}."
        )
    validation.dedupe_key(name)
    return name


def _insert_workflow(name: str, key: str | None, steps: int, traceparent: str | None) -> Workflow | None:
    """The workflow's row; None when a running one holds its key."""
    fields = {
        "name": name,
        "dedupe_key": key,
        "steps": steps,
        "unfinished": steps,
        "traceparent": traceparent,
    }
    if key is None:
        return Workflow.objects.create(**fields)
    try:
        with transaction.atomic():  # a savepoint: the conflict must not end the caller's transaction
            return Workflow.objects.create(**fields)
    except IntegrityError:
        return None


def _insert_steps(workflow_id: int, laid: Plan, *, first: int, depth: int, added_by: int | None) -> list[int]:
    """The plan's steps (numbered from ``first``, in columns from ``depth``) and edges, in a
    few bulk statements; the new steps' ids in the plan's order. A step that waits for
    nothing is released."""
    rows = [
        StepRow(
            position=first + index,
            name=planned.name,
            type=planned.step.type,
            queue=planned.step.queue,
            priority=planned.step.priority,
            payload=planned.step.payload_text,
            dedupe_key=planned.step.dedupe_key,
            concurrency_key=planned.step.concurrency_key,
            rate_key=planned.step.rate_key,
            max_attempts=planned.step.max_attempts,
            delay=planned.step.delay,
            results_as=planned.step.results_as,
            status=STEP.RELEASED if planned.pending == 0 else STEP.WAITING,
            pending=planned.pending,
            depth=depth + planned.depth,
        )
        for index, planned in enumerate(laid.steps)
    ]
    ids = driver().insert_steps(workflow_id, rows, added_by)
    driver().insert_edges([(ids[up], ids[down]) for up, down in laid.edges])
    return ids


# --- a step's moments (called by jobs.store, in the job's transaction) ----------------------


def step_succeeded(step_id: int, result: str | None) -> int:
    """The step's job was just marked succeeded in the caller's transaction: the step is
    succeeded with its result (JSON text), its workflow one step closer to its end, and
    the steps that waited for it and for nothing else are released. How many jobs that
    added."""
    workflow = Subquery(WorkflowStep.objects.filter(pk=step_id).values("workflow_id")[:1])
    done = {"unfinished": 1, "status": RUNNING}
    # The finish time and the status before the count: MariaDB assigns from left to right,
    # so each assignment here reads the row as it was, on every database.
    Workflow.objects.filter(pk=workflow).update(
        finished_at=Case(When(**done, then=Now()), default=F("finished_at")),
        status=Case(When(**done, then=Value(Workflow.Status.SUCCEEDED)), default=F("status")),
        unfinished=F("unfinished") - 1,
    )
    WorkflowStep.objects.filter(pk=step_id).update(
        status=STEP.SUCCEEDED,
        result=None if result is None else json.loads(result),
        message="",
        finished_at=Now(),
    )
    return driver().release_successors(step_id)


@dataclass(frozen=True)
class _Failed:
    id: int
    workflow_id: int
    position: int
    name: str

    @property
    def label(self) -> str:
        return f"#{self.position} {self.name}"


def _step_of(job: Job) -> _Failed | None:
    if job.step_id is None:
        return None
    found = (
        WorkflowStep.objects.filter(pk=job.step_id)
        .values_list("id", "workflow_id", "position", "name")
        .first()
    )
    return None if found is None else _Failed(*found)


def step_failed(job: Job, reason: str) -> None:
    """The step's job failed for good (or was cancelled; ``reason`` says which), in the
    caller's transaction, its row locked: the step fails, every step that waits for it
    (however far below) is cancelled, saying so, and its running workflow fails. Steps
    that do not wait for it run on."""
    step = _step_of(job)
    if step is None:
        return  # its workflow was pruned
    workflow = Workflow.objects.select_for_update().get(pk=step.workflow_id)
    WorkflowStep.objects.filter(pk=step.id).update(
        status=STEP.FAILED, message=_fit(reason), finished_at=Now()
    )
    if workflow.status == Workflow.Status.CANCELLED:
        return  # what waited for it was cancelled with the workflow
    driver().cancel_below([step.id], _fit(f"Upstream step {step.label} failed."))
    if workflow.status == RUNNING:
        Workflow.objects.filter(pk=workflow.pk).update(
            status=Workflow.Status.FAILED,
            finished_at=Now(),
            message=_fit(f"Step {step.label} {reason}"),
        )


def step_retried(job: Job) -> None:
    """The failed step's job was queued again (an operator's Retry), in the caller's
    transaction: the step is released again and the steps its failure cancelled wait for
    it again; with no failed step left, the workflow runs again, where it stopped."""
    step = _step_of(job)
    if step is None:
        return
    workflow = Workflow.objects.select_for_update().get(pk=step.workflow_id)
    WorkflowStep.objects.filter(pk=step.id).update(status=STEP.RELEASED, message="", finished_at=None)
    if workflow.status != Workflow.Status.FAILED:
        return  # a cancelled workflow stays cancelled: only this job runs again
    driver().restore_below(step.id)
    still = [
        _Failed(*row)
        for row in WorkflowStep.objects.filter(workflow_id=workflow.pk, status=STEP.FAILED)
        .order_by("position")
        .values_list("id", "workflow_id", "position", "name")
    ]
    if still:  # what waits for another failed step stays cancelled
        driver().cancel_below([each.id for each in still], _fit(f"Upstream step {still[0].label} failed."))
        return
    try:
        with transaction.atomic():
            Workflow.objects.filter(pk=workflow.pk).update(
                status=RUNNING, finished_at=None, message=_fit(f"Resumed: step {step.label} retried.")
            )
    except IntegrityError:
        raise InvalidTransition(
            f"Workflow #{workflow.pk} cannot resume: another {workflow.name} workflow with dedupe key "
            f"{workflow.dedupe_key!r} is running."
        ) from None


# --- a workflow's operator actions ------------------------------------------------------------


def cancel(workflow: Workflow | int) -> Workflow:
    """Cancel a running (or failed) workflow: its waiting steps and its queued jobs are
    cancelled; a running step is waited out (and what follows it never starts)."""
    from jobs import store  # the store calls this module: imported when used

    workflow_id = workflow.pk if isinstance(workflow, Workflow) else workflow
    with transaction.atomic():
        row = Workflow.objects.select_for_update().get(pk=workflow_id)
        if row.status not in (RUNNING, Workflow.Status.FAILED):
            raise InvalidTransition(
                f"Only a running or failed workflow can be cancelled; workflow #{row.pk} is {row.status}."
            )
        steps = WorkflowStep.objects.filter(workflow_id=row.pk)
        cancelled_jobs = store.cancel_steps(steps.filter(status=STEP.RELEASED).values("id"))
        gone = {"status": STEP.CANCELLED, "message": STEP_CANCELLED, "finished_at": Now()}
        steps.filter(status=STEP.WAITING).update(**gone)
        steps.filter(pk__in=cancelled_jobs).update(**gone)
        # Released but without a job: it waited for its dedupe key.
        steps.filter(status=STEP.RELEASED).exclude(Exists(Job.objects.filter(step_id=OuterRef("pk")))).update(
            **gone
        )
        Workflow.objects.filter(pk=row.pk).update(
            status=Workflow.Status.CANCELLED, message=CANCELLED, finished_at=Now()
        )
    row.refresh_from_db()
    return row


def retry(workflow: Workflow | int) -> Workflow:
    """Queue the job of each failed step again (``jobs.retry``): the workflow resumes where
    it stopped."""
    from jobs import store

    workflow_id = workflow.pk if isinstance(workflow, Workflow) else workflow
    row = Workflow.objects.get(pk=workflow_id)
    if row.status != Workflow.Status.FAILED:
        raise InvalidTransition(f"Only a failed workflow can be retried; workflow #{row.pk} is {row.status}.")
    with transaction.atomic():
        failed = WorkflowStep.objects.filter(workflow_id=row.pk, status=STEP.FAILED).values("id")
        jobs = list(Job.objects.filter(step_id__in=failed, status=Status.FAILED).values_list("pk", flat=True))
        if not jobs:
            raise InvalidTransition(
                f"Workflow #{row.pk} has no failed step whose job can be retried (a cancelled job cannot)."
            )
        for job_id in jobs:
            store.retry(job_id)
    row.refresh_from_db()
    return row


# --- steps added while one runs -------------------------------------------------------------


def add(step_id: int, added: Sequence[Flow]) -> list[int]:
    """Add ``added`` (in parallel, when several) to the workflow of the running step
    ``step_id``: they start when it succeeds, and the steps that wait for it wait for them
    too. Names that are already in the workflow mean the same steps: adding them again
    (a plain step retried) adds nothing. Returns the steps' ids."""
    if not added:
        return []
    flow = added[0] if len(added) == 1 else flows.group(added)
    with transaction.atomic():
        adder = WorkflowStep.objects.filter(pk=step_id).values("workflow_id", "depth", "status").first()
        if adder is None or adder["status"] != STEP.RELEASED:
            raise InvalidTransition(f"Step {step_id} is not running: only a running step adds steps.")
        workflow = Workflow.objects.select_for_update().get(pk=adder["workflow_id"])
        if workflow.status == Workflow.Status.CANCELLED:
            raise InvalidTransition(f"Workflow #{workflow.pk} is cancelled: no step is added to it.")
        from jobs.conf import jobs_settings

        room = jobs_settings.WORKFLOW_MAX_STEPS - workflow.steps
        laid = flows.plan(flow, max_steps=max(room, 0))
        names = [planned.name for planned in laid.steps]
        there = dict(
            WorkflowStep.objects.filter(workflow_id=workflow.pk, name__in=names).values_list("name", "id")
        )
        if len(there) == len(names):
            return [there[name] for name in names]  # added before, by an earlier try
        if there:
            raise InvalidJobOption(
                f"Workflow #{workflow.pk} already has steps named {', '.join(sorted(there)[:3])}: "
                "add them all again, or none."
            )
        span = laid.depth
        # Every column after the adder's moves right, to make room for the new steps.
        WorkflowStep.objects.filter(workflow_id=workflow.pk, depth__gt=adder["depth"]).update(
            depth=F("depth") + span
        )
        for index in laid.sources:
            laid.steps[index].pending += 1  # each first step waits for the adder
        ids = _insert_steps(
            workflow.pk, laid, first=workflow.steps + 1, depth=adder["depth"] + 1, added_by=step_id
        )
        successors = list(
            WorkflowEdge.objects.filter(upstream_id=step_id).values_list("downstream_id", flat=True)
        )
        sinks = [ids[index] for index in laid.sinks]
        driver().insert_edges(
            [(step_id, ids[index]) for index in laid.sources]
            + [(sink, successor) for sink in sinks for successor in successors]
        )
        WorkflowStep.objects.filter(pk__in=successors).update(pending=F("pending") + len(sinks))
        Workflow.objects.filter(pk=workflow.pk).update(
            steps=F("steps") + len(ids), unfinished=F("unfinished") + len(ids)
        )
    return ids


# --- reads of a running step -----------------------------------------------------------------


@dataclass(frozen=True)
class StepInfo:
    id: int
    workflow_id: int
    name: str
    results_as: str


def step_info(step_id: int) -> StepInfo | None:
    found = (
        WorkflowStep.objects.filter(pk=step_id).values_list("id", "workflow_id", "name", "results_as").first()
    )
    return None if found is None else StepInfo(*found)


@dataclass(frozen=True)
class StepState:
    """A step as ``jobs.workflow_steps`` reads it: what it runs, where it stands, and
    ``shown_status``, its job's status while it has one ("retrying" for a retry waiting,
    "blocked" while its dedupe key is held), else its own."""

    id: int
    position: int
    name: str
    type: str
    payload: dict[str, Any]
    depth: int
    status: str
    shown_status: str
    result: Any
    message: str
    job_id: int | None


def steps_of(workflow_id: int) -> list[StepState]:
    """The workflow's steps by column, then number."""
    rows = list(WorkflowStep.objects.filter(workflow_id=workflow_id).order_by("depth", "position"))
    jobs = {
        step: (job_id, status, attempts)
        for job_id, step, status, attempts in Job.objects.filter(
            step_id__in=[row.pk for row in rows]
        ).values_list("pk", "step_id", "status", "attempts")
    }
    found = []
    for row in rows:
        job_id, status, attempts = jobs.get(row.pk, (None, "blocked", 0))
        shown = row.status
        if row.status == STEP.RELEASED:
            shown = "retrying" if status == Status.QUEUED and attempts else status
        found.append(
            StepState(
                row.pk,
                row.position,
                row.name,
                row.type,
                row.payload,
                row.depth,
                row.status,
                shown,
                row.result,
                row.message,
                job_id,
            )
        )
    return found


def upstream_results(step_id: int) -> dict[str, Any]:
    """What each step ``step_id`` waited for returned, by step name, in their order."""
    upstream = WorkflowEdge.objects.filter(downstream_id=step_id).values("upstream_id")
    return dict(
        WorkflowStep.objects.filter(pk__in=upstream).order_by("position").values_list("name", "result")
    )


# --- housekeeping --------------------------------------------------------------------------------


def release_blocked() -> int:
    """Insert the jobs of released steps that have none: when they were released, an
    active job held their dedupe key. Each worker's reaper calls it; a step still blocked
    waits for the next pass. Locks the steps it looks at (skipping those another
    transaction holds: one being counted down, or cancelled) for its one short transaction."""
    with transaction.atomic():
        blocked = list(
            WorkflowStep.objects.select_for_update(skip_locked=True)
            .filter(status=STEP.RELEASED)
            .exclude(Exists(Job.objects.filter(step_id=OuterRef("pk"))))
            .order_by("id")
            .values_list("id", flat=True)[:BLOCKED_BATCH]
        )
        return driver().release_steps(blocked) if blocked else 0


def prune(finished_before: Any, batch_size: int) -> int:
    """Delete finished workflows (their steps and edges go with them): succeeded and
    cancelled ones finished before ``finished_before``, failed ones too once none of their
    jobs is kept (a failed job stays until it is retried or dismissed). In batches, each
    its own short transaction; returns how many workflows."""
    total = 0
    kept = Job.objects.filter(step__workflow_id=OuterRef("pk"))
    while True:
        ids = list(
            Workflow.objects.filter(finished_at__lt=finished_before)
            .exclude(status=RUNNING)
            .filter(~Q(status=Workflow.Status.FAILED) | ~Exists(kept))
            .order_by("id")
            .values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            return total
        with transaction.atomic():
            steps = WorkflowStep.objects.filter(workflow_id__in=ids).values("id")
            Job.objects.filter(step_id__in=steps).update(step=None)  # their step is going
            Workflow.objects.filter(pk__in=ids).delete()
        total += len(ids)
