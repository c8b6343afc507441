"""pullrequest.sync and checks.sync: mirror pull requests, then record CI results and
approvals of the supervised ones as observed evidence."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from workspaces.models import PullRequest, Repository
from workspaces.providers import code_host
from workspaces.services import Progress, load, no_progress


@dataclass(frozen=True)
class SyncResult:
    created: int = 0
    updated: int = 0
    removed: int = 0


def sync_pull_requests(repository_id: int, progress: Progress = no_progress) -> SyncResult:
    repository = load(Repository, repository_id)
    progress(10, "Listing pull requests")
    # Fetch before the transaction: a host call must not hold row locks.
    pulls = {pull.number: pull for pull in code_host().pull_requests(repository)}
    now = timezone.now()
    created = updated = 0
    with transaction.atomic():
        # Locks this repository's row so two syncs of it apply one after the other.
        Repository.objects.select_for_update().get(pk=repository.pk)
        for pull in pulls.values():
            _, was_created = PullRequest.objects.update_or_create(
                repository=repository,
                number=pull.number,
                defaults={
                    "title": pull.title[:300],
                    "body": pull.body,
                    "author": pull.author,
                    "state": pull.state,
                    "head_sha": pull.head_sha,
                    "changed_files": list(pull.changed_files),
                    "merged_at": pull.merged_at,
                    "synced_at": now,
                },
            )
            created += was_created
            updated += not was_created
    progress(100, f"{created} new, {updated} updated")
    return SyncResult(created=created, updated=updated)


def sync_checks(repository_id: int, progress: Progress = no_progress) -> int:
    """Record CI status and approvals of open supervised pull requests; returns how many."""
    repository = load(Repository, repository_id)
    host = code_host()
    pulls = list(
        repository.pull_requests.filter(supervised=True, state=PullRequest.State.OPEN).order_by("number")
    )
    for index, pull in enumerate(pulls, start=1):
        observed = host.checks(repository, pull.number)
        pull.ci_status = observed.ci_status
        pull.checks = observed.checks
        pull.approvals = observed.approvals
        pull.checks_observed_at = timezone.now()
        pull.save(update_fields=["ci_status", "checks", "approvals", "checks_observed_at"])
        progress(100 * index / len(pulls), f"#{pull.number}: {observed.ci_status or 'no CI'}")
    return len(pulls)
