"""brain.derive: read an ingested repository into its workspace's context (the "brain")."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from workspaces.ai.generator import get_generator
from workspaces.errors import NotReady
from workspaces.models import AIArtifact, Repository, Workspace
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


def derive_brain(repository_id: int, progress: Progress = no_progress) -> Workspace:
    repository = load(Repository, repository_id)
    if repository.status == Repository.Status.NEW:
        raise NotReady(f"Repository {repository.name!r} has not been ingested yet.")
    progress(20, "Reading the repository")
    entry = repository_context(repository)
    prompt = "\n".join(
        [f"Describe what {repository.name} contributes to the workspace."]
        + [f"- {key}: {value}" for key, value in entry.items() if value and key != "summary"]
    )
    generation = get_generator().generate(prompt, task="brain.derive")
    entry["notes"] = generation.text
    with transaction.atomic():
        # Locks the workspace row: two repositories of one workspace derived at once must
        # not overwrite each other's part of the context.
        workspace = Workspace.objects.select_for_update().get(pk=repository.workspace_id)
        context = dict(workspace.context)
        context.setdefault("repositories", {})[str(repository.pk)] = entry
        context["derived_at"] = timezone.now().isoformat()
        workspace.context = context
        workspace.save(update_fields=["context"])
        AIArtifact.objects.create(
            workspace=workspace,
            repository=repository,
            kind="brain.derive",
            model=generation.model,
            prompt=prompt,
            output=generation.text,
        )
    progress(100, "Context updated")
    return workspace
