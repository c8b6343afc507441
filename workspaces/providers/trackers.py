"""The live work trackers, one module per provider, chosen by the connection's kind."""

from __future__ import annotations

from workspaces.errors import ProviderNotConfigured
from workspaces.providers.base import WorkTracker


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
