"""ai.workflow: run a registered AI workflow and keep its artifact."""

from __future__ import annotations

import language_models
from workspaces.ai import artifacts, workflows
from workspaces.errors import NotReady
from workspaces.models import AIArtifact, PullRequest, Repository, Workspace
from workspaces.services import Progress, load, no_progress


def run_workflow(
    name: str,
    workspace_id: int,
    *,
    repository_id: int | None = None,
    pull_request_id: int | None = None,
    progress: Progress = no_progress,
) -> AIArtifact:
    build = workflows.get(name)
    workspace = load(Workspace, workspace_id)
    repository = load(Repository, repository_id) if repository_id is not None else None
    pull_request = load(PullRequest, pull_request_id) if pull_request_id is not None else None
    if pull_request is not None and repository is None:
        repository = pull_request.repository
    if repository is not None and repository.workspace_id != workspace.pk:
        raise NotReady(f"Repository #{repository.pk} is not part of workspace #{workspace.pk}.")
    progress(10, f"Preparing {name}")
    prompt = build(workflows.Subject(workspace, repository, pull_request))
    progress(30, f"Asking the model ({language_models.provider_name()})")
    answer = language_models.complete(prompt)
    artifact = artifacts.keep(
        answer, kind=name, workspace=workspace, repository=repository, pull_request=pull_request
    )
    progress(100, f"Saved artifact #{artifact.pk}")
    return artifact
