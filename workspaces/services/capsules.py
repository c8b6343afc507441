"""capsules.retrospective: build review capsules for the last few merged pull requests.

The code host is asked first for the last merged pull requests with their diff stats,
checks and approvals (``pull_requests.refresh_merged``); the capsules are built from
those rows."""

from __future__ import annotations

from django.db import IntegrityError, transaction

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
    repository_id: int, progress: Progress = no_progress, limit: int = RECENT_MERGED
) -> int:
    """Capsules for the ``limit`` most recently merged pull requests that have none; returns how many."""
    repository = load(Repository, repository_id)
    progress(5, "Reading the last merged pull requests from the code host")
    refresh_merged(repository, limit)
    recent = list(
        repository.pull_requests.filter(state=PullRequest.State.MERGED, merged_at__isnull=False)
        .select_related("capsule")
        .order_by("-merged_at", "-number")[:limit]
    )
    todo = [pull for pull in recent if not hasattr(pull, "capsule")]
    built = 0
    for index, pull in enumerate(todo, start=1):
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
            built += 1
        except IntegrityError:
            pass  # a concurrent run built this one first
        progress(100 * index / len(todo), f"Capsule for #{pull.number}")
    return built
