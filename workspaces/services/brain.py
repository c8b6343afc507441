"""brain.derive: read an ingested repository into its workspace's context (the "brain")."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

import language_models
from language_models import Prompt
from workspaces import job_types
from workspaces.ai import artifacts, facts
from workspaces.errors import NotReady
from workspaces.models import Repository, Workspace
from workspaces.services import Progress, load, no_progress
from workspaces.services.analysis import architecture_map


def repository_context(repository: Repository) -> dict:
    architecture = repository.architecture or architecture_map(repository.paths)
    return {
        "name": repository.name,
        "kind": repository.kind,
        "primary_language": repository.primary_language,
        "languages": repository.languages,
        "components": [component["name"] for component in architecture["components"]],
        "entry_points": architecture["entry_points"],
        "findings": sorted({finding["rule"] for finding in repository.findings}),
        "summary": repository.summary,
    }


def brain_prompt(repository: Repository) -> Prompt:
    workspace = repository.workspace
    known = [f"Summary so far: {repository.summary}"] if repository.summary else []
    return Prompt(
        task=job_types.DERIVE_BRAIN,
        instruction=(
            f"Describe in at most 120 words what repository {repository.name} contributes to "
            f"workspace {workspace.name}: its role, what other parts rely on, and what a teammate "
            "should know before changing it."
        ),
        facts=(
            *facts.repository(repository),
            *known,
            *facts.recent_pull_requests(repository),
            *facts.work_items(workspace),
        ),
    )


def derive_brain(repository_id: int, progress: Progress = no_progress) -> Workspace:
    repository = load(Repository, repository_id)
    if repository.status == Repository.Status.NEW:
        raise NotReady(f"Repository {repository.name!r} has not been ingested yet.")
    progress(20, "Reading the repository")
    entry = repository_context(repository)
    prompt = brain_prompt(repository)
    progress(40, f"Asking the model ({language_models.provider_name()})")
    answer = language_models.complete(prompt)
    entry["notes"] = answer.text
    entry["notes_by"] = answer.model if answer.written_by_model else "no model (local digest)"
    with transaction.atomic():
        # Locks the workspace row: two repositories of one workspace derived at once must
        # not overwrite each other's part of the context.
        workspace = Workspace.objects.select_for_update().get(pk=repository.workspace_id)
        context = dict(workspace.context)
        context.setdefault("repositories", {})[str(repository.pk)] = entry
        context["derived_at"] = timezone.now().isoformat()
        workspace.context = context
        workspace.save(update_fields=["context"])
        artifacts.keep(answer, kind=job_types.DERIVE_BRAIN, workspace=workspace, repository=repository)
    progress(100, "Context updated")
    return workspace
