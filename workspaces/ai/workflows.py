"""Registered AI workflows: each builds a prompt from its subject; ``ai.workflow`` runs one
by name through the generator and keeps the result as an artifact."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workspaces.errors import NotReady, UnknownWorkflow
from workspaces.models import PullRequest, Repository, Workspace


@dataclass(frozen=True)
class Subject:
    workspace: Workspace
    repository: Repository | None = None
    pull_request: PullRequest | None = None


PromptBuilder = Callable[[Subject], str]
_workflows: dict[str, PromptBuilder] = {}


def workflow(name: str) -> Callable[[PromptBuilder], PromptBuilder]:
    def register(build: PromptBuilder) -> PromptBuilder:
        _workflows[name] = build
        return build

    return register


def get(name: str) -> PromptBuilder:
    try:
        return _workflows[name]
    except KeyError:
        known = ", ".join(sorted(_workflows))
        raise UnknownWorkflow(f"Unknown AI workflow {name!r}; registered: {known}.") from None


def names() -> list[str]:
    return sorted(_workflows)


def _need_pull_request(subject: Subject) -> PullRequest:
    if subject.pull_request is None:
        raise NotReady("This workflow needs a pull request.")
    return subject.pull_request


@workflow("test_plan")
def plan_tests(subject: Subject) -> str:
    pull = _need_pull_request(subject)
    lines = [f"Write a test plan for pull request #{pull.number}: {pull.title}", "Changed files:"]
    lines += [f"- Exercise {path}" for path in pull.changed_files] or ["- No changed files recorded"]
    if pull.ci_status:
        lines.append(f"- Current CI status: {pull.ci_status}")
    return "\n".join(lines)


@workflow("capsule_summary")
def capsule_summary(subject: Subject) -> str:
    pull = _need_pull_request(subject)
    capsule = getattr(pull, "capsule", None)
    if capsule is None:
        raise NotReady(f"Pull request #{pull.number} has no review capsule yet.")
    lines = [f"Summarise the review capsule of #{pull.number}: {pull.title}"]
    lines += [f"- {key}: {value}" for key, value in sorted(capsule.data.items())]
    return "\n".join(lines)


@workflow("workspace_overview")
def workspace_overview(subject: Subject) -> str:
    lines = [f"Give an overview of workspace {subject.workspace.name}"]
    for repo in subject.workspace.repositories.order_by("name"):
        lines.append(
            f"- {repo.name}: {repo.kind or 'unclassified'}, {repo.primary_language or 'unknown language'}"
        )
    return "\n".join(lines)
