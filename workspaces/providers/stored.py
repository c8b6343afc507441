"""The embedded defaults: providers that read what is already stored, with no network.

They stand in for a live host or tracker in the demo and in development, and say so: their
``label`` is shown in the jobs' messages and in the admin. ``Repository.metadata`` holds
``pull_requests`` (a list of dicts) and ``checks`` (by pull request number);
``WorkConnection.snapshot`` holds a connection's items for the demo.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from workspaces.models import Repository, WorkConnection
from workspaces.providers.base import ChecksData, PullRequestChanges, PullRequestData, WorkItemData


def _when(value: Any):
    return parse_datetime(value) if isinstance(value, str) and value else None


class StoredCodeHost:
    """Pull requests and checks from ``Repository.metadata``: the embedded default, not a
    live code host (``CODE_HOST=github`` selects GitHub)."""

    label = "stored snapshot (embedded default, no live code host; CODE_HOST=github for GitHub)"

    def pull_requests(self, repository: Repository, cursor: Mapping[str, Any]) -> PullRequestChanges:
        return PullRequestChanges(pulls=list(self._pulls(repository)))

    def merged_pull_requests(self, repository: Repository, limit: int) -> list[PullRequestData]:
        merged = [pull for pull in self._pulls(repository) if pull.merged_at is not None]
        return sorted(merged, key=lambda pull: (pull.merged_at, pull.number), reverse=True)[:limit]

    def _pulls(self, repository: Repository) -> Iterable[PullRequestData]:
        for raw in repository.metadata.get("pull_requests", []):
            yield PullRequestData(
                number=int(raw["number"]),
                title=str(raw.get("title", "")),
                body=str(raw.get("body", "")),
                author=str(raw.get("author", "")),
                state=str(raw.get("state", "open")),
                head_sha=str(raw.get("head_sha", "")),
                changed_files=tuple(raw.get("changed_files", ())),
                merged_at=_when(raw.get("merged_at")),
                updated_at=_when(raw.get("updated_at")),
                additions=raw.get("additions"),
                deletions=raw.get("deletions"),
            )

    def checks(self, repository: Repository, number: int, head_sha: str = "") -> ChecksData:
        raw = repository.metadata.get("checks", {}).get(str(number), {})
        return ChecksData(
            ci_status=str(raw.get("ci_status", "")),
            checks=list(raw.get("checks", [])),
            approvals=list(raw.get("approvals", [])),
        )


class SnapshotTracker:
    """Items from ``WorkConnection.snapshot``: the embedded default for the demo, not a live
    tracker (``WORK_TRACKER=api`` selects each connection's provider)."""

    label = "stored snapshot (embedded default, no live tracker; WORK_TRACKER=api for the provider)"
    incremental = False

    def items(
        self, connection: WorkConnection, *, updated_since: datetime | None = None
    ) -> Iterable[WorkItemData]:
        for raw in connection.snapshot:
            yield WorkItemData(
                external_id=str(raw["id"]),
                title=str(raw.get("title", "")),
                status=str(raw.get("status", "")),
                description=str(raw.get("description", "")),
                url=str(raw.get("url", "")),
                updated_at=_when(raw.get("updated_at")),
            )
