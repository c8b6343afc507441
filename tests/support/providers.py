"""In-memory fakes of the provider interfaces (``workspaces.providers``), for the tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from workspaces.errors import ProviderUnavailable
from workspaces.models import Repository, WorkConnection
from workspaces.providers.base import ChecksData, PullRequestChanges, PullRequestData, WorkItemData


@dataclass
class InMemoryCodeHost:
    pulls: dict[int, list[PullRequestData]] = field(default_factory=dict)  # by repository id
    results: dict[tuple[int, int], ChecksData] = field(default_factory=dict)  # (repository id, number)

    label = "in-memory code host"

    def pull_requests(self, repository: Repository, cursor: Mapping[str, Any]) -> PullRequestChanges:
        return PullRequestChanges(pulls=list(self.pulls.get(repository.pk, [])))

    def merged_pull_requests(self, repository: Repository, limit: int) -> list[PullRequestData]:
        merged = [pull for pull in self.pulls.get(repository.pk, []) if pull.merged_at is not None]
        return sorted(merged, key=lambda pull: (pull.merged_at, pull.number), reverse=True)[:limit]

    def checks(self, repository: Repository, number: int, head_sha: str = "") -> ChecksData:
        return self.results.get((repository.pk, number), ChecksData(ci_status=""))


@dataclass
class InMemoryTracker:
    """Items by connection id; ``down`` makes every fetch fail as a network error would."""

    boards: dict[int, list[WorkItemData]] = field(default_factory=dict)
    down: bool = False
    calls: int = 0
    incremental: bool = True
    label: str = "in-memory tracker"
    asked_since: list[datetime | None] = field(default_factory=list)

    def items(
        self, connection: WorkConnection, *, updated_since: datetime | None = None
    ) -> Iterable[WorkItemData]:
        self.calls += 1
        self.asked_since.append(updated_since)
        if self.down:
            raise ProviderUnavailable(f"{connection.get_kind_display()} did not answer.")
        items = self.boards.get(connection.pk, [])
        if updated_since is not None:
            items = [item for item in items if item.updated_at is None or item.updated_at >= updated_since]
        return list(items)
