"""Registered AI workflows: each builds a prompt from its subject's recorded data;
``ai.workflow`` runs one by name through the configured model and keeps its artifact."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from language_models import Prompt
from workspaces.ai import facts
from workspaces.errors import NotReady, UnknownWorkflow
from workspaces.models import PullRequest, Repository, Workspace


@dataclass(frozen=True)
class Subject:
    workspace: Workspace
    repository: Repository | None = None
    pull_request: PullRequest | None = None


PromptBuilder = Callable[[Subject], Prompt]
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
def plan_tests(subject: Subject) -> Prompt:
    pull = _need_pull_request(subject)
    repository = pull.repository
    return Prompt(
        task="test_plan",
        instruction=(
            f"Write a test plan for pull request #{pull.number} ({pull.title}) of repository "
            f"{repository.name}. List, as numbered steps: what to check for each changed file, "
            "the edge cases and failure paths the change could break, and what the recorded "
            "checks already cover. Mark anything the facts cannot tell you as an open question."
        ),
        facts=(
            *facts.pull_request(pull),
            *facts.findings_in(repository, pull.changed_files),
            f"Repository kind: {repository.kind or 'unclassified'}; main language: "
            f"{repository.primary_language or 'unknown'}",
        ),
    )


@workflow("capsule_summary")
def capsule_summary(subject: Subject) -> Prompt:
    pull = _need_pull_request(subject)
    capsule = getattr(pull, "capsule", None)
    if capsule is None:
        raise NotReady(f"Pull request #{pull.number} has no review capsule yet.")
    recorded = [f"Capsule {key}: {value}" for key, value in sorted(capsule.data.items())]
    return Prompt(
        task="capsule_summary",
        instruction=(
            f"Summarise the review capsule of merged pull request #{pull.number} ({pull.title}) "
            "in at most 150 words: what changed, the evidence that it was reviewed and tested "
            "(checks, approvals), and what a reviewer should follow up."
        ),
        facts=(*recorded, *facts.pull_request(pull)),
    )


@workflow("workspace_overview")
def workspace_overview(subject: Subject) -> Prompt:
    repositories = subject.workspace.repositories.order_by("name")
    lines = [
        f"Repository {repo.name}: {repo.kind or 'unclassified'}, {repo.primary_language or 'unknown language'}, "
        f"{repo.file_count} files"
        for repo in repositories
    ]
    return Prompt(
        task="workspace_overview",
        instruction=(
            f"Give an overview of workspace {subject.workspace.name} for a new team member: its "
            "repositories, how they relate, and the work in progress. At most 200 words."
        ),
        facts=(*lines, *facts.work_items(subject.workspace)),
    )
