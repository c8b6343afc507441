"""The engine's public API: what a project (and this repository's domain apps) imports as
``jobs``, and nothing below it. Declaring, enqueuing, asking about and steering jobs, the
timers, and the admin hooks for a project's own pages.

The guide is the documentation site: docs/jobs.md (declaring and enqueuing), docs/api.md
(every name exported here), docs/timers.md, docs/workflows.md, docs/flow-control.md, docs/admin.md,
docs/testing.md.

Django imports this package before any model can load, so what needs the models (the
``Job`` model, ``@job``, which registers into the model-backed registry) is imported on
first use; the functions import the engine's modules when called.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.burst import run_burst_worker
from jobs.context import JobContext
from jobs.errors import (
    InvalidJobOption,
    InvalidPayload,
    InvalidTransition,
    JobError,
    PermanentError,
    RetryableError,
    RetryLater,
    UnknownJobType,
)
from jobs.management.timer_command import TimerCommand
from jobs.timers import periodic

if TYPE_CHECKING:
    from django.db.models import Exists, QuerySet

    from jobs.admin.record_page import JobButton, RecordJobsMixin
    from jobs.declare import JobFunction, job
    from jobs.models import Job, TimerSlot, Workflow
    from jobs.workflow.flow import Chain, Flow, Group, Step
    from jobs.workflow.progress import StepState

__all__ = [
    "Chain",
    "Group",
    "InvalidJobOption",
    "InvalidPayload",
    "InvalidTransition",
    "Job",
    "JobContext",
    "JobError",
    "JobButton",
    "JobFunction",
    "PermanentError",
    "RecordJobsMixin",
    "RetryLater",
    "RetryableError",
    "Step",
    "TimerCommand",
    "UnknownJobType",
    "Workflow",
    "active_job",
    "admin_list_url",
    "admin_url",
    "cancel",
    "cancel_if_queued",
    "cancel_workflow",
    "chain",
    "dismiss",
    "enqueue",
    "enqueue_many",
    "group",
    "has_active_job",
    "job",
    "jobs_about",
    "jobs_for",
    "latest_job",
    "next_slots",
    "pause_queue",
    "pause_timer",
    "periodic",
    "register_admin_link",
    "register_payload_link",
    "reset_queue_limits",
    "resume_queue",
    "resume_timer",
    "retry",
    "retry_workflow",
    "run_burst_worker",
    "run_timer_now",
    "set_queue_limits",
    "start",
    "step",
    "timer_slots",
    "workflow_steps",
    "workflow_url",
    "workflows_for",
]

# Names that need the app registry, and the module that defines each.
_LOADED_ON_USE = {
    "Job": "jobs.models",
    "Workflow": "jobs.models",
    "Step": "jobs.workflow.flow",
    "Chain": "jobs.workflow.flow",
    "Group": "jobs.workflow.flow",
    "job": "jobs.declare",
    "JobFunction": "jobs.declare",
    "JobButton": "jobs.admin.record_page",
    "RecordJobsMixin": "jobs.admin.record_page",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name in _LOADED_ON_USE:
            return getattr(importlib.import_module(_LOADED_ON_USE[name]), name)
        raise AttributeError(f"module 'jobs' has no attribute {name!r}")


def _type_name(job_type: str | JobFunction) -> str:
    return job_type if isinstance(job_type, str) else job_type.name


# --- enqueue ------------------------------------------------------------------------------


def enqueue(
    job_type: str | JobFunction,
    payload: dict[str, Any] | None = None,
    *,
    priority: str | None = None,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
) -> Job:
    """Add one job in the caller's transaction (commit makes it visible, rollback drops it).

    The queue and attempts come from the type's declaration. A type that declares
    ``dedupe`` derives its key from ``payload``; while a job of that key is queued or
    running, enqueue returns it instead of adding another. ``dedupe_key`` is for types
    that declare none; giving one to a type that owns its key is refused.
    """
    from jobs import store

    return store.enqueue(
        _type_name(job_type), payload, priority=priority, run_at=run_at, dedupe_key=dedupe_key
    )


def enqueue_many(
    job_type: str | JobFunction,
    payloads: Iterable[dict[str, Any]],
    *,
    priority: str | None = None,
    run_at: datetime | None = None,
    dedupe_keys: Sequence[str | None] | None = None,
    batch_size: int = 10_000,
) -> int:
    """Add many jobs of one type in a few statements; returns how many were added.

    Payloads whose key is already queued or running, or repeats an earlier payload's, are
    skipped. ``dedupe_keys`` (one per payload) is for types that declare no key.
    """
    from jobs import store

    return store.enqueue_many(
        _type_name(job_type),
        payloads,
        priority=priority,
        run_at=run_at,
        dedupe_keys=dedupe_keys,
        batch_size=batch_size,
    )


# --- the jobs of a key ----------------------------------------------------------------------
# Each takes the type and its key fields (``email_id=7``), as the type's dedupe template
# names them; the type must declare one.


def active_job(job_type: str | JobFunction, /, **key: Any) -> Job | None:
    """The queued or running job of this key, or None."""
    from jobs import queries

    return queries.active_job(_type_name(job_type), key)


def latest_job(job_type: str | JobFunction, /, **key: Any) -> Job | None:
    """The most recently added job of this key, whatever its status, or None."""
    from jobs import queries

    return queries.latest_job(_type_name(job_type), key)


def jobs_for(job_type: str | JobFunction, /, **key: Any) -> QuerySet[Job]:
    """Every job of this key still kept, newest first (finished ones are pruned in time)."""
    from jobs import queries

    return queries.jobs_for(_type_name(job_type), key)


def jobs_about(**key: Any) -> QuerySet[Job]:
    """Every kept job of every type keyed by exactly these fields, newest first: all that
    happened to one subject (``jobs_about(repository_id=7)``: its ingests, analyses, syncs)."""
    from jobs import queries

    return queries.jobs_about(key)


def has_active_job(job_type: str | JobFunction, /, **key: Any) -> Exists:
    """Whether a job of this key is queued or running, as an expression for a domain queryset.

    The key fields are column references of the outer query, e.g.
    ``WorkConnection.objects.exclude(has_active_job("workmanagement.sync",
    connection_id=OuterRef("pk")))``.
    """
    from jobs import queries

    return queries.has_active_job(_type_name(job_type), key)


def cancel_if_queued(job_type: str | JobFunction, /, **key: Any) -> Job | None:
    """Cancel the job of this key if it is queued, and return it; a running job is left
    to finish, and None is returned, as when there is none."""
    from jobs import queries

    return queries.cancel_if_queued(_type_name(job_type), key)


# --- operator actions -----------------------------------------------------------------------


def cancel(job: Job | int) -> Job:
    """Cancel a queued job; any other status raises ``InvalidTransition``."""
    from jobs import store

    return store.cancel(job)


def retry(job: Job | int) -> Job:
    """Queue a failed job again with a full budget; any other status raises
    ``InvalidTransition``."""
    from jobs import store

    return store.retry(job)


def dismiss(job: Job | int) -> Job:
    """Take a failed job off its queue's failed list (it stays failed, and is pruned in
    time); any other status, or a job already dismissed, raises ``InvalidTransition``."""
    from jobs import store

    return store.dismiss(job)


# --- queues: pause and limits (``docs/flow-control.md``) -------------------------------------


def pause_queue(queue: str) -> None:
    """Start no job of ``queue`` until it is resumed, on every worker within a poll
    interval: its running jobs finish, enqueue still works."""
    from jobs.flow import queues

    queues.pause(queue)


def resume_queue(queue: str) -> None:
    from jobs.flow import queues

    queues.resume(queue)


def set_queue_limits(queue: str, *, concurrency: int | None = None, rate: str | None = None) -> None:
    """Hold ``queue`` to at most ``concurrency`` jobs running at once and ``rate`` starts
    per period ("100/m") across the fleet, in place of its ``JOBS_QUEUES`` entry (None: no
    such limit). ``ValueError`` for a bad value."""
    from jobs.flow import queues

    queues.set_limits(queue, concurrency=concurrency, rate=rate)


def reset_queue_limits(queue: str) -> None:
    """Back to the limits ``JOBS_QUEUES`` sets for ``queue`` (or none)."""
    from jobs.flow import queues

    queues.reset_limits(queue)


# --- workflows ------------------------------------------------------------------------------


def step(
    job_type: str | JobFunction | Any,
    payload: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    priority: str | None = None,
    delay: float | None = None,
    dedupe_key: str | None = None,
    results_as: str | None = None,
) -> Step:
    """One step of a workflow: a job of ``job_type`` (a declared type's name, its ``@job``
    declaration, or a django.tasks ``@task``) with ``payload``, enqueued when the steps it
    waits for succeeded. Checked here, as ``enqueue`` checks a job.

    ``name`` names it in its workflow (``ctx.upstream_results`` of the steps after it; by
    default its type, with its dedupe key: ``repository.ingest[repository:7]``, numbered
    where it repeats). ``delay`` seconds from its release to its run. ``results_as``: its
    handler also gets the upstream results as this keyword argument."""
    from jobs.workflow import flow

    return flow.step(
        job_type,
        payload,
        name=name,
        priority=priority,
        delay=delay,
        dedupe_key=dedupe_key,
        results_as=results_as,
    )


def chain(*parts: Flow) -> Chain:
    """Steps (or chains, or groups) one after the other: each starts when the previous one
    succeeded."""
    from jobs.workflow import flow

    return flow.chain(*parts)


def group(members: Iterable[Flow], *, then: Flow | None = None) -> Group:
    """Steps (or chains, or groups) in parallel; ``then`` starts once all succeeded."""
    from jobs.workflow import flow

    return flow.group(members, then=then)


def start(flow: Flow, *, name: str | None = None, dedupe_key: str | None = None) -> Workflow:
    """Start a workflow in the caller's transaction (commit makes it run, rollback drops
    it): its steps and edges in a few bulk statements, and the jobs of its first steps.
    ``name`` says what it is (its first step's type by default); with ``dedupe_key``, a
    running workflow of that name and key is returned instead of starting a second."""
    from jobs.workflow import progress

    return progress.start(flow, name=name, dedupe_key=dedupe_key)


def cancel_workflow(workflow: Workflow | int) -> Workflow:
    """Cancel a running or failed workflow: its waiting steps and queued jobs are
    cancelled; a running step is waited out. Any other status raises
    ``InvalidTransition``."""
    from jobs.workflow import progress

    return progress.cancel(workflow)


def retry_workflow(workflow: Workflow | int) -> Workflow:
    """Queue the job of each failed step of a failed workflow again: it resumes where it
    stopped. Any other status raises ``InvalidTransition``."""
    from jobs.workflow import progress

    return progress.retry(workflow)


def workflows_for(name: str, *, dedupe_key: str | None = None) -> QuerySet[Workflow]:
    """The kept workflows of ``name`` (and ``dedupe_key``, if given), newest first."""
    from jobs.models import Workflow

    rows = Workflow.objects.filter(name=name)
    if dedupe_key is not None:
        rows = rows.filter(dedupe_key=dedupe_key)
    return rows.order_by("-id")


def workflow_steps(workflow: Workflow | int) -> list[StepState]:
    """A workflow's steps by column (``depth``: each right of the steps it waits for), then
    number (``position``), each with its ``name``, ``type``, ``payload``, ``result``,
    ``job_id`` and ``shown_status``: its job's status while it has one (queued, running,
    retrying; blocked while its dedupe key is held), else its own (waiting, succeeded,
    failed, cancelled)."""
    from jobs.workflow import progress

    return progress.steps_of(workflow if isinstance(workflow, int) else workflow.pk)


def workflow_url(workflow: Workflow | int) -> str:
    """The address of a workflow's page in the admin (a ``Workflow`` or its id)."""
    from django.urls import reverse

    return reverse(
        "admin:platform_workflow_change", args=[workflow if isinstance(workflow, int) else workflow.pk]
    )


# --- timers ---------------------------------------------------------------------------------


def next_slots(timer: str, *, after: datetime | None = None, count: int = 1) -> list[datetime]:
    """The next ``count`` slots of ``timer`` after ``after`` (default now), in the timer's
    time zone: what its interval, or its cron expression in its zone, makes of the days
    ahead. The installed schedule (an operator may have changed the interval), else the
    declared one."""
    from jobs.timetable import schedule

    return schedule.next_slots(timer, after=after, count=count)


def timer_slots(timer: str) -> QuerySet[TimerSlot]:
    """The booked slots of ``timer``, newest first: each with its kind (scheduled, catch-up,
    manual), outcome, job (while it is kept) and times."""
    from jobs.models import TimerSlot

    return TimerSlot.objects.filter(timer__name=timer).select_related("job").order_by("-slot")


def pause_timer(timer: str) -> None:
    """Book no slot of ``timer`` until it is resumed; a run already queued still runs."""
    from jobs.timetable import schedule

    schedule.pause(timer)


def resume_timer(timer: str) -> None:
    """Book ``timer``'s slots again, from its next one (the paused ones are not missed)."""
    from jobs.timetable import schedule

    schedule.resume(timer)


def run_timer_now(timer: str, *, by: str = "") -> Job:
    """Run ``timer`` now, as a slot of its own (the next scheduled slot still runs, once);
    returns the run's job."""
    from jobs.timetable import schedule

    return schedule.run_now(timer, by=by)


# --- the admin page -------------------------------------------------------------------------


def admin_url(job: Job | int) -> str:
    """The address of a job's page in the admin (a ``Job`` or its id)."""
    from django.urls import reverse

    return reverse("admin:platform_job_change", args=[job if isinstance(job, int) else job.pk])


def admin_list_url(**filters: str) -> str:
    """The address of the "Background jobs" page filtered by ``filters`` (``type``,
    ``status``, ``queue``, ``q``), e.g. ``admin_list_url(type="email.process", status="queued")``."""
    from urllib.parse import urlencode

    from django.urls import reverse

    url = reverse("admin:platform_job_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


def register_admin_link(key: str, label: str, *, url_name: str = "", **filters: str) -> None:
    """Put a link on the "Background jobs" page: the page filtered by ``filters``
    (``status``, ``queue``, ``type``, ``q``) or the admin page named ``url_name``. Call it
    from an app's ``admin.py``; see ``jobs.admin.links``."""
    from jobs.admin.links import register_link

    register_link(key, label, url_name=url_name, **filters)


def register_payload_link(field: str, model: str, *, label: str = "") -> None:
    """Link the records a job's payload names: ``field`` (``"email_id"``) holds the id of a
    ``model`` (``"pipeline.emailmessage"``), whose admin page a job's row and page link to,
    under ``label`` ("email #7"; the model's verbose name by default). Call it from an app's
    ``admin.py``; see ``jobs.admin.payload_links``."""
    from jobs.admin.payload_links import register

    register(field, model, label=label)
