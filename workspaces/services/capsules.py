"""capsules.retrospective: build review capsules for the last few merged pull requests.

The code host is asked first for the last merged pull requests with their diff stats,
checks and approvals (``pull_requests.refresh_merged``); the capsules are built from
those rows. Run as a workflow's step (``triggers.request_capsules``), it adds one
``capsule.build`` step per pull request to its workflow, each built on its own (and
retried on its own); run alone, it builds them one after the other."""

from __future__ import annotations

from collections.abc import Callable

from django.db import IntegrityError, transaction

import jobs
import language_models
from workspaces import job_types
from workspaces.models import PullRequest, Repository, ReviewCapsule
from workspaces.services import Progress, load, no_progress
from workspaces.services.pull_requests import refresh_merged

RECENT_MERGED = 5


def capsule_data(pull: PullRequest) -> dict:
    return {
        "title": pull.title,
        "author": pull.author,
        "merged_at": pull.merged_at.isoformat() if pull.merged_at else None,
        "changed_files": pull.changed_files,
        "diff_stats": (f"+{pull.additions} -{pull.deletions}" if pull.additions is not None else "unknown"),
        "ci_status": pull.ci_status or "unknown",
        "checks": [
            f"{check.get('name')}: {check.get('conclusion') or check.get('status')}" for check in pull.checks
        ],
        "approvals": pull.approvals,
    }


def build_retrospective(
    repository_id: int,
    progress: Progress = no_progress,
    limit: int = RECENT_MERGED,
    add_steps: Callable[..., object] | None = None,
) -> int:
    """Capsules for the ``limit`` most recently merged pull requests that have none; returns
    how many. With ``add_steps`` (a workflow step's ``ctx.add_steps``) each becomes a
    ``capsule.build`` step of the workflow instead of being built here."""
    repository = load(Repository, repository_id)
    progress(5, "Reading the last merged pull requests from the code host")
    refresh_merged(repository, limit)
    recent = list(
        repository.pull_requests.filter(state=PullRequest.State.MERGED, merged_at__isnull=False)
        .select_related("capsule")
        .order_by("-merged_at", "-number")[:limit]
    )
    todo = [pull for pull in recent if not hasattr(pull, "capsule")]
    if add_steps is not None:
        add_steps(*(jobs.step(job_types.BUILD_CAPSULE, {"pull_request_id": pull.pk}) for pull in todo))
        progress(100, f"{len(todo)} capsules to build, one step each")
        return len(todo)
    built = 0
    for index, pull in enumerate(todo, start=1):
        built += build_capsule(pull.pk)
        progress(100 * index / len(todo), f"Capsule for #{pull.number}")
    return built


def build_capsule(pull_request_id: int) -> bool:
    """The capsule of one merged pull request, unless it has one; whether it was built."""
    pull = load(PullRequest, pull_request_id)
    if ReviewCapsule.objects.filter(pull_request=pull).exists():
        return False
    data = capsule_data(pull)
    # The capsule's own summary quotes its evidence (no model on the ingestion queue);
    # the "capsule_summary" workflow asks the model for one.
    summary = language_models.digest(
        language_models.Prompt(
            task=job_types.BUILD_CAPSULES,
            instruction=f"Capsule for #{pull.number}: {pull.title}",
            facts=tuple(f"{key}: {value}" for key, value in data.items()),
        )
    )
    try:
        with transaction.atomic():
            ReviewCapsule.objects.create(pull_request=pull, summary=summary, data=data)
    except IntegrityError:
        return False  # a concurrent run built this one first
    return True
