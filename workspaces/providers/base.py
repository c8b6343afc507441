"""The provider interfaces and their plain data; which implementation is in use is
``workspaces.providers.selection``'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from workspaces.providers.text import storable, storable_data

if TYPE_CHECKING:
    from workspaces.models import Repository, WorkConnection


class _Storable:
    """Provider data holds only text the database can store (``providers.text``), whichever
    provider built it: its strings are cleaned as it is made."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, str):
                object.__setattr__(self, name, storable(value))
            elif isinstance(value, tuple | list | dict):
                cleaned = storable_data(value)
                object.__setattr__(self, name, tuple(cleaned) if isinstance(value, tuple) else cleaned)


@dataclass(frozen=True)
class PullRequestData(_Storable):
    number: int
    title: str
    body: str = ""
    author: str = ""
    state: str = "open"
    head_sha: str = ""
    changed_files: tuple[str, ...] = ()
    merged_at: datetime | None = None
    updated_at: datetime | None = None
    # Diff stats, when the host gave them (GitHub: for a pull request read on its own).
    additions: int | None = None
    deletions: int | None = None


@dataclass(frozen=True)
class PullRequestChanges(_Storable):
    """What a code host returned for one sync: the pull requests that changed since
    ``cursor`` (every one, on the first sync), and the cursor for the next sync, which the
    service keeps on the repository without reading it."""

    pulls: list[PullRequestData]
    cursor: Mapping[str, Any] = field(default_factory=dict)
    not_modified: bool = False  # the host said nothing changed (an ETag matched)


@dataclass(frozen=True)
class ChecksData(_Storable):
    """CI results and approvals as observed on the host for one pull request."""

    ci_status: str  # "success", "failure", "pending" or "" when nothing ran
    checks: list[dict] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WorkItemData(_Storable):
    external_id: str
    title: str
    status: str = ""
    description: str = ""
    url: str = ""
    updated_at: datetime | None = None


class CodeHost(Protocol):
    # What the admin and the jobs' messages call this host ("GitHub REST API at …").
    label: str

    def pull_requests(self, repository: Repository, cursor: Mapping[str, Any]) -> PullRequestChanges:
        """Pull requests of every state changed since ``cursor`` (``{}``: all of them)."""
        ...

    def checks(self, repository: Repository, number: int, head_sha: str = "") -> ChecksData:
        """CI results and approvals of one pull request (of its head commit ``head_sha``)."""
        ...

    def merged_pull_requests(self, repository: Repository, limit: int) -> list[PullRequestData]:
        """The ``limit`` most recently merged pull requests, with their diff stats."""
        ...


class WorkTracker(Protocol):
    """A work tracker's items, for ``workmanagement.sync``: one implementation per kind of
    connection (``workspaces/providers/jira.py``, ``clickup.py``, ``monday.py``), chosen by
    ``work_tracker(connection.kind)``."""

    # What the admin and the sync's messages call it ("Jira Cloud", "stored snapshot …").
    label: str
    # Whether ``updated_since`` narrows the listing; without it every sync lists everything.
    incremental: bool

    def items(
        self, connection: WorkConnection, *, updated_since: datetime | None = None
    ) -> Iterable[WorkItemData]:
        """Every item of the connection, or (``updated_since`` given, ``incremental`` true)
        at least those changed since then. Raises the provider errors of ``workspaces.errors``
        (and ``jobs.RetryLater`` for a rate limit); no message names the credential."""
        ...
