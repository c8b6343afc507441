"""pullrequest.sync and checks.sync: mirror pull requests, then record CI results and
approvals of the supervised ones as observed evidence. capsules.retrospective refreshes the
last merged pull requests through ``refresh_merged`` before it builds their capsules.

The host is called before any transaction: a network call must not hold row locks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from jobs import enqueue
from workspaces import job_types
from workspaces.models import PullRequest, Repository
from workspaces.providers import PullRequestData, code_host
from workspaces.services import Progress, load, no_progress

# Where the code host's cursor of the pull-request listing is kept on the repository.
PULLS_CURSOR = "pulls"


@dataclass(frozen=True)
class SyncResult:
    created: int = 0
    updated: int = 0
    removed: int = 0
    not_modified: bool = False
    source: str = ""


def sync_pull_requests(
    repository_id: int, progress: Progress = no_progress, *, queue_checks: bool = True
) -> SyncResult:
    """Pull requests of every state changed since the last sync (all of them the first time).
    ``queue_checks=False`` when checks.sync follows anyway (the next step of a workflow)."""
    repository = load(Repository, repository_id)
    host = code_host()
    progress(10, f"Listing pull requests from the {host.label}")
    changes = host.pull_requests(repository, repository.host_state.get(PULLS_CURSOR, {}))
    now = timezone.now()
    created = updated = 0
    with transaction.atomic():
        # Locks this repository's row so two syncs of it apply one after the other.
        locked = Repository.objects.select_for_update().get(pk=repository.pk)
        for pull in changes.pulls:
            was_created = _save(repository, pull, now)
            created += was_created
            updated += not was_created
        locked.host_state = {**locked.host_state, PULLS_CURSOR: dict(changes.cursor)}
        locked.pulls_synced_at = now
        locked.save(update_fields=["host_state", "pulls_synced_at"])
        # The supervised ones' CI results and approvals follow, as their own job.
        if queue_checks and not changes.not_modified and _supervised(repository).exists():
            enqueue(job_types.SYNC_CHECKS, {"repository_id": repository.pk})
    if changes.not_modified:
        progress(100, f"Unchanged since the last sync ({host.label})")
    else:
        progress(100, f"{created} new, {updated} updated ({host.label})")
    return SyncResult(created=created, updated=updated, not_modified=changes.not_modified, source=host.label)


def _save(repository: Repository, pull: PullRequestData, now) -> bool:
    fields: dict[str, Any] = {
        "title": pull.title[:300],
        "body": pull.body,
        "author": pull.author[:100],
        "state": pull.state,
        "head_sha": pull.head_sha,
        "merged_at": pull.merged_at,
        "updated_at_host": pull.updated_at,
        "synced_at": now,
    }
    # What a listing does not carry keeps what an earlier, fuller read recorded.
    if pull.changed_files:
        fields["changed_files"] = list(pull.changed_files)
    if pull.additions is not None:
        fields["additions"] = pull.additions
    if pull.deletions is not None:
        fields["deletions"] = pull.deletions
    _, created = PullRequest.objects.update_or_create(
        repository=repository, number=pull.number, defaults=fields
    )
    return created


def sync_checks(repository_id: int, progress: Progress = no_progress) -> int:
    """Record CI status and approvals of open supervised pull requests; returns how many."""
    repository = load(Repository, repository_id)
    host = code_host()
    pulls = list(_supervised(repository).order_by("number"))
    for index, pull in enumerate(pulls, start=1):
        _observe(repository, pull, host)
        progress(100 * index / len(pulls), f"#{pull.number}: {pull.ci_status or 'no CI'}")
    return len(pulls)


def _supervised(repository: Repository):
    return repository.pull_requests.filter(supervised=True, state=PullRequest.State.OPEN)


def _observe(repository: Repository, pull: PullRequest, host) -> None:
    observed = host.checks(repository, pull.number, head_sha=pull.head_sha)
    pull.ci_status = observed.ci_status
    pull.checks = observed.checks
    pull.approvals = observed.approvals
    pull.checks_observed_at = timezone.now()
    pull.save(update_fields=["ci_status", "checks", "approvals", "checks_observed_at"])


def refresh_merged(repository: Repository, limit: int) -> list[PullRequest]:
    """The ``limit`` most recently merged pull requests as the host has them now, with
    diff stats, checks and approvals recorded; returns their rows, newest merge first."""
    host = code_host()
    now = timezone.now()
    rows = []
    for pull in host.merged_pull_requests(repository, limit):
        _save(repository, pull, now)
        row = PullRequest.objects.get(repository=repository, number=pull.number)
        _observe(repository, row, host)
        rows.append(row)
    return rows
