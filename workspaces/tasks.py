"""The eleven workspace job types: declarations only (load by id, call a service).

Queues and attempts are those of the background-jobs page; the names are stored in rows,
so never rename one.
"""

from jobs import JobContext, job
from workspaces.services import (
    analysis,
    brain,
    capsules,
    decisions,
    ingest,
    provisioning,
    pull_requests,
    retention,
    work_items,
    workflows,
)


@job("repository.ingest", queue="ingestion", attempts=3, timeout=900)
def ingest_repository(ctx: JobContext, *, repository_id: int) -> None:
    ingest.ingest_repository(repository_id, progress=ctx.progress)


@job("repository.analyse", queue="ai", attempts=2, timeout=1800)
def analyse_repository(ctx: JobContext, *, repository_id: int) -> None:
    analysis.analyse_repository(repository_id, progress=ctx.progress)


@job("ai.workflow", queue="ai", attempts=2, timeout=1800)
def run_ai_workflow(
    ctx: JobContext,
    *,
    workflow: str,
    workspace_id: int,
    repository_id: int | None = None,
    pull_request_id: int | None = None,
) -> None:
    workflows.run_workflow(
        workflow,
        workspace_id,
        repository_id=repository_id,
        pull_request_id=pull_request_id,
        progress=ctx.progress,
    )


@job("pullrequest.sync", queue="default", attempts=3, timeout=600)
def sync_pull_requests(ctx: JobContext, *, repository_id: int) -> None:
    pull_requests.sync_pull_requests(repository_id, progress=ctx.progress)


@job("checks.sync", queue="default", attempts=3, timeout=600)
def sync_checks(ctx: JobContext, *, repository_id: int) -> None:
    pull_requests.sync_checks(repository_id, progress=ctx.progress)


@job("workmanagement.sync", queue="default", attempts=3, timeout=600)
def sync_work_connection(ctx: JobContext, *, connection_id: int) -> None:
    work_items.sync_connection(connection_id, progress=ctx.progress)


@job("brain.derive", queue="ai", attempts=2, timeout=1800)
def derive_brain(ctx: JobContext, *, repository_id: int) -> None:
    brain.derive_brain(repository_id, progress=ctx.progress)


@job("decisions.mine", queue="ai", attempts=2, timeout=1800)
def mine_decisions(ctx: JobContext, *, workspace_id: int) -> None:
    decisions.mine_decisions(workspace_id, progress=ctx.progress)


@job("workspace.provision", queue="ingestion", attempts=2, timeout=1800)
def provision_workspace(ctx: JobContext, *, workspace_id: int) -> None:
    provisioning.provision_workspace(workspace_id, progress=ctx.progress)


@job("capsules.retrospective", queue="ingestion", attempts=2, timeout=900)
def build_capsules(ctx: JobContext, *, repository_id: int) -> None:
    capsules.build_retrospective(repository_id, progress=ctx.progress)


@job("retention.purge", queue="default", attempts=2, timeout=900)
def purge_retained_bodies(ctx: JobContext, *, organization_id: int | None = None) -> None:
    retention.purge_expired(organization_id, progress=ctx.progress)
