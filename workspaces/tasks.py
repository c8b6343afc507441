"""The eleven workspace job types, the steps of the workspace workflows (a workspace marked
ready, one pull request's capsule), the removal of a deleted repository's working folder,
and the two workspace timers: declarations only (load by id, call a service).

Queues and attempts are those of the background-jobs page; the names are stored in rows,
so never rename one. Each type's dedupe key names its subject ("repository:7"): at most
one job per type and subject is queued or running.

Flow limits across the fleet (docs/flow-control.md): a repository is ingested by one job at
a time; a repository's code-host syncs (pull requests, checks) share its token, so one of
them runs at a time per repository; a tracker connection syncs once at a time. The ``ai``
queue's rate is the model provider's (``MODEL_REQUESTS_PER_MINUTE``, config/settings.py).
"""

from jobs import JobContext, job, periodic
from workspaces import job_types

# The services are imported by each job when it runs, not here: a worker imports this
# module at start-up to know the job types, and the services import what the jobs need
# (git, the code hosts' clients, JWT and its cryptography, the model providers), which a
# worker that runs none of these jobs, or has not yet, need not load (docs/deploy.md).

REPOSITORY = "repository:{repository_id}"
WORKSPACE = "workspace:{workspace_id}"
# The concurrency keys: one code-host connection (a repository's token) and one tracker
# connection at a time.
CODE_HOST = "codehost:{repository_id}"
CONNECTION = "connection:{connection_id}"


@job(
    job_types.INGEST_REPOSITORY,
    queue="ingestion",
    attempts=3,
    timeout=900,
    dedupe=REPOSITORY,
    concurrency=1,
    concurrency_key=REPOSITORY,
)
def ingest_repository(ctx: JobContext, *, repository_id: int) -> None:
    from workspaces.services import ingest

    ingest.ingest_repository(repository_id, progress=ctx.progress)


@job(job_types.REMOVE_CHECKOUT, queue="ingestion", attempts=3, timeout=900, dedupe="checkout:{folder}")
def remove_checkout(ctx: JobContext, *, folder: str) -> None:
    from workspaces.services import checkouts

    # On the ingestion queue: its workers are the machines that hold the working folders.
    checkouts.remove(folder)


@job(job_types.ANALYSE_REPOSITORY, queue="ai", attempts=2, timeout=1800, dedupe=REPOSITORY)
def analyse_repository(ctx: JobContext, *, repository_id: int) -> None:
    from workspaces.services import analysis

    analysis.analyse_repository(repository_id, progress=ctx.progress)


@job(job_types.AI_WORKFLOW, queue="ai", attempts=2, timeout=1800)
def run_ai_workflow(
    ctx: JobContext,
    *,
    workflow: str,
    workspace_id: int,
    repository_id: int | None = None,
    pull_request_id: int | None = None,
) -> None:
    from workspaces.services import workflows

    workflows.run_workflow(
        workflow,
        workspace_id,
        repository_id=repository_id,
        pull_request_id=pull_request_id,
        progress=ctx.progress,
    )


@job(
    job_types.SYNC_PULL_REQUESTS,
    queue="default",
    attempts=3,
    timeout=600,
    dedupe=REPOSITORY,
    concurrency=1,
    concurrency_key=CODE_HOST,
)
def sync_pull_requests(ctx: JobContext, *, repository_id: int) -> None:
    from workspaces.services import pull_requests

    # A workflow's step is followed by its own checks.sync step: it queues none.
    pull_requests.sync_pull_requests(
        repository_id, progress=ctx.progress, queue_checks=ctx.workflow_id is None
    )


@job(
    job_types.SYNC_CHECKS,
    queue="default",
    attempts=3,
    timeout=600,
    dedupe=REPOSITORY,
    concurrency=1,
    concurrency_key=CODE_HOST,
)
def sync_checks(ctx: JobContext, *, repository_id: int) -> None:
    from workspaces.services import pull_requests

    pull_requests.sync_checks(repository_id, progress=ctx.progress)


@job(
    job_types.SYNC_WORK_CONNECTION,
    queue="default",
    attempts=3,
    timeout=600,
    dedupe=CONNECTION,
    concurrency=1,
    concurrency_key=CONNECTION,
)
def sync_work_connection(ctx: JobContext, *, connection_id: int) -> None:
    from workspaces.services import work_items

    work_items.sync_connection(connection_id, progress=ctx.progress)


@job(job_types.DERIVE_BRAIN, queue="ai", attempts=2, timeout=1800, dedupe=REPOSITORY)
def derive_brain(ctx: JobContext, *, repository_id: int) -> None:
    from workspaces.services import brain

    brain.derive_brain(repository_id, progress=ctx.progress)


@job(job_types.MINE_DECISIONS, queue="ai", attempts=2, timeout=1800, dedupe=WORKSPACE)
def mine_decisions(ctx: JobContext, *, workspace_id: int) -> None:
    from workspaces.services import decisions

    decisions.mine_decisions(workspace_id, progress=ctx.progress)


@job(job_types.PROVISION_WORKSPACE, queue="ingestion", attempts=2, timeout=1800, dedupe=WORKSPACE)
def provision_workspace(ctx: JobContext, *, workspace_id: int) -> None:
    from workspaces.services import provisioning

    # Provisioning is a workflow (the Provision button starts it); a job of this type (one
    # queued before, or by hand) starts it too, or finds it running.
    workflow = provisioning.start_provisioning(workspace_id)
    ctx.progress(100, f"Provisioning workflow #{workflow.pk} {workflow.status}")


@job(job_types.MARK_WORKSPACE_READY, queue="ingestion", attempts=2, timeout=60, dedupe=WORKSPACE, atomic=True)
def mark_workspace_ready(ctx: JobContext, *, workspace_id: int) -> None:
    from workspaces.services import provisioning

    provisioning.mark_ready(workspace_id, progress=ctx.progress)


@job(job_types.BUILD_CAPSULES, queue="ingestion", attempts=2, timeout=900, dedupe=REPOSITORY)
def build_capsules(ctx: JobContext, *, repository_id: int) -> None:
    from workspaces.services import capsules

    # As a workflow's step it adds one capsule.build step per pull request; alone, it
    # builds them itself.
    add_steps = ctx.add_steps if ctx.step_id is not None else None
    capsules.build_retrospective(repository_id, progress=ctx.progress, add_steps=add_steps)


@job(
    job_types.BUILD_CAPSULE,
    queue="ingestion",
    attempts=2,
    timeout=300,
    dedupe="pull_request:{pull_request_id}",
    atomic=True,
)
def build_capsule(ctx: JobContext, *, pull_request_id: int) -> None:
    from workspaces.services import capsules

    capsules.build_capsule(pull_request_id)


@job(
    job_types.PURGE_RETAINED_BODIES,
    queue="default",
    attempts=2,
    timeout=900,
    dedupe="organization:{organization_id}",
)
def purge_retained_bodies(ctx: JobContext, *, organization_id: int | None = None) -> None:
    from workspaces.services import retention

    retention.purge_expired(organization_id, progress=ctx.progress)


# --- timers: ``manage.py reconcile`` (15 min), ``manage.py trial_sweep`` (1 h), and a step of
# ``manage.py sweep`` (5 min) ------------------------------------------------------------------
# Each step runs under ``run_timer``'s advisory lock; each is also idempotent on its own
# (dedupe keys, the reminder's unique pair, deleting by age), so two runs at once cannot
# double anything.


@periodic("reconcile", every=900)
def reconcile_work_connections() -> str:
    from workspaces.services import reconcile

    return f"{reconcile.enqueue_due_syncs()} syncs queued"


@periodic("trial_sweep", every=3600)
def remind_trials_ending() -> str:
    from workspaces.services import trials

    return f"{trials.send_trial_reminders()} trial reminders sent"


@periodic("sweep", every=300)
def prune_webhook_deliveries() -> str:
    from workspaces.webhooks import deliveries, tokens

    tokens.prune()  # expired tokens verify no more: nothing to bind
    return f"{deliveries.prune()} webhook deliveries pruned"
