"""Which provider is in use: the one a test or a caller set (``use_code_host``,
``use_work_tracker``), else the one the settings select (``CODE_HOST``, ``WORK_TRACKER``).
The implementations are imported only when chosen."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from workspaces.errors import ProviderNotConfigured
from workspaces.providers.base import CodeHost, WorkTracker

_code_host: CodeHost | None = None
_trackers: dict[str, WorkTracker] = {}


def code_host() -> CodeHost:
    """The host in use: one set by ``use_code_host``, else the one ``CODE_HOST`` selects."""
    if _code_host is not None:
        return _code_host
    if settings.CODE_HOST == "github":
        from workspaces.providers.github import GitHubCodeHost

        return GitHubCodeHost(api_url=settings.GITHUB_API_URL, token=settings.GITHUB_TOKEN)
    from workspaces.providers.stored import StoredCodeHost

    return StoredCodeHost()


def work_tracker(kind: str) -> WorkTracker:
    """The tracker for connections of ``kind``: one set by ``use_work_tracker``, else the
    provider's API (``WORK_TRACKER=api``), else the stored snapshot (the embedded default)."""
    if kind in _trackers:
        return _trackers[kind]
    from workspaces.models import WorkConnection

    if kind not in WorkConnection.Kind.values:
        raise ProviderNotConfigured(f"No work tracker for connections of kind {kind!r}.")
    if settings.WORK_TRACKER == "api":
        return api_tracker(kind)
    from workspaces.providers.stored import SnapshotTracker

    return SnapshotTracker()


@contextmanager
def use_code_host(host: CodeHost) -> Iterator[CodeHost]:
    """Use ``host`` for pull requests and checks inside the block (tests, a real client)."""
    global _code_host
    saved, _code_host = _code_host, host
    try:
        yield host
    finally:
        _code_host = saved


@contextmanager
def use_work_tracker(kind: str, tracker: WorkTracker) -> Iterator[WorkTracker]:
    """Use ``tracker`` for connections of ``kind`` inside the block."""
    saved = _trackers.get(kind)
    _trackers[kind] = tracker
    try:
        yield tracker
    finally:
        if saved is None:
            _trackers.pop(kind, None)
        else:
            _trackers[kind] = saved


def api_tracker(kind: str) -> WorkTracker:
    if kind == "jira":
        from workspaces.providers.jira import JiraTracker

        return JiraTracker()
    if kind == "clickup":
        from workspaces.providers.clickup import ClickUpTracker

        return ClickUpTracker()
    if kind == "monday":
        from workspaces.providers.monday import MondayTracker

        return MondayTracker()
    raise ProviderNotConfigured(f"No work tracker for connections of kind {kind!r}.")
