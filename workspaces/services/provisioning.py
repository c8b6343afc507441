"""workspace.provision: set up a freshly created workspace from its repository.

Ingests each repository not yet ingested, marks the workspace ready and queues
``brain.derive`` for each repository (the AI part runs on the ai queue, not here).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from jobs import enqueue
from workspaces import job_types
from workspaces.errors import NotReady
from workspaces.models import Repository, Workspace
from workspaces.services import Progress, load, no_progress
from workspaces.services.ingest import ingest_repository


def provision_workspace(workspace_id: int, progress: Progress = no_progress) -> Workspace:
    workspace = load(Workspace, workspace_id)
    repositories = list(workspace.repositories.order_by("id"))
    if not repositories:
        raise NotReady(f"Workspace {workspace.name!r} has no repository to set up from.")
    for index, repository in enumerate(repositories):
        if repository.status == Repository.Status.NEW:
            progress(80 * index / len(repositories), f"Ingesting {repository.name}")
            ingest_repository(repository.pk)
    with transaction.atomic():
        workspace.status = Workspace.Status.READY
        workspace.provisioned_at = timezone.now()
        workspace.save(update_fields=["status", "provisioned_at"])
        for repository in repositories:
            enqueue(job_types.DERIVE_BRAIN, {"repository_id": repository.pk})
    progress(100, f"Ready with {len(repositories)} repositories")
    return workspace
