"""Default providers that read what is already stored: no network, deterministic.

``Repository.metadata`` holds ``pull_requests`` (a list of dicts) and ``checks`` (by pull
request number); ``WorkConnection.snapshot`` holds a connection's items for the demo.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from workspaces.models import Repository, WorkConnection
from workspaces.providers.base import ChecksData, PullRequestData, WorkItemData


def _when(value: Any):
    return parse_datetime(value) if isinstance(value, str) and value else None


class StoredCodeHost:
    def pull_requests(self, repository: Repository) -> Iterable[PullRequestData]:
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
            )

    def checks(self, repository: Repository, number: int) -> ChecksData:
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
