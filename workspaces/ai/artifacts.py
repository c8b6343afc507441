"""Keeping what a model call produced: one ``AIArtifact`` per call, with who wrote it, what
it cost and how long it took. The prompt and output bodies are purged by
``retention.purge`` once past the organisation's retention window; the rest stays."""

from __future__ import annotations

from typing import Any

from language_models import Answer
from workspaces.models import AIArtifact, PullRequest, Repository, Workspace


def keep(
    answer: Answer,
    *,
    kind: str,
    workspace: Workspace | int,
    repository: Repository | None = None,
    pull_request: PullRequest | None = None,
    data: dict[str, Any] | None = None,
) -> AIArtifact:
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    return AIArtifact.objects.create(
        workspace_id=workspace_id,
        repository=repository,
        pull_request=pull_request,
        kind=kind,
        prompt=answer.prompt,
        output=answer.text,
        data=data or {},
        **answer.record(),
    )
