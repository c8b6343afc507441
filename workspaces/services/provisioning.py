"""workspace.provision: set up a freshly created workspace from its repositories, as a
workflow (``jobs.start``): its new repositories ingested in parallel, the workspace marked
ready once they all are (``workspace.ready``), each repository derived into the workspace's
context (``brain.derive``), then its decisions mined (``decisions.mine``). Each step's
completion and the release of the next commit together, so a worker lost mid-way neither
skips a step nor runs one twice in the workflow's order.
"""

from __future__ import annotations

from django.utils import timezone

import jobs
from workspaces import job_types
from workspaces.errors import NotReady
from workspaces.models import Repository, Workspace
from workspaces.services import Progress, load, no_progress


def provision_flow(workspace: Workspace) -> jobs.Chain:
    """The steps that provision ``workspace`` from its repositories."""
    repositories = list(workspace.repositories.order_by("id"))
    if not repositories:
        raise NotReady(f"Workspace {workspace.name!r} has no repository to set up from.")
    ready = jobs.step(job_types.MARK_WORKSPACE_READY, {"workspace_id": workspace.pk})
    new = [repository for repository in repositories if repository.status == Repository.Status.NEW]
    ingested = (
        jobs.group([jobs.step(job_types.INGEST_REPOSITORY, {"repository_id": r.pk}) for r in new], then=ready)
        if new
        else ready
    )
    return jobs.chain(
        ingested,
        jobs.group([jobs.step(job_types.DERIVE_BRAIN, {"repository_id": r.pk}) for r in repositories]),
        jobs.step(job_types.MINE_DECISIONS, {"workspace_id": workspace.pk}),
    )


def start_provisioning(workspace_id: int) -> jobs.Workflow:
    """Start the workspace's provisioning workflow in the caller's transaction; while one
    runs, that one is returned."""
    workspace = load(Workspace, workspace_id)
    return jobs.start(
        provision_flow(workspace), name=job_types.PROVISION_WORKSPACE, dedupe_key=f"workspace:{workspace.pk}"
    )


def mark_ready(workspace_id: int, progress: Progress = no_progress) -> Workspace:
    """The workflow's step after the ingests: the workspace is ready to work with."""
    workspace = load(Workspace, workspace_id)
    workspace.status = Workspace.Status.READY
    workspace.provisioned_at = timezone.now()
    workspace.save(update_fields=["status", "provisioned_at"])
    progress(100, f"Ready with {workspace.repositories.count()} repositories")
    return workspace
