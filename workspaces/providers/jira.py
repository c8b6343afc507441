"""Jira Cloud, REST API v3: the issues of one project.

- ``GET {site}/rest/api/3/search/jql`` ("enhanced search"), with ``jql``, ``fields``,
  ``maxResults`` and ``nextPageToken``: each page names the next one's token until
  ``isLast``. (The older ``GET /rest/api/3/search`` with ``startAt``/``total`` is deprecated
  and removed from Jira Cloud, so it is not used.)
- Authentication: HTTP Basic with the account's email (``WorkConnection.account``) and an
  API token (the connection's encrypted credential).
- JQL: ``project = "KEY" ORDER BY updated ASC``; an incremental sync adds
  ``AND updated >= -Nm`` (a relative time: absolute JQL times are read in the token owner's
  time zone, relative ones are not).
- Mapping: the issue key is the item's id, ``summary`` its title, ``status.name`` its status,
  ``description`` (Atlassian Document Format) its text, ``{site}/browse/{key}`` its URL,
  ``updated`` its update time.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from workspaces.errors import ProviderAnswerInvalid
from workspaces.models import WorkConnection
from workspaces.providers.base import WorkItemData
from workspaces.providers.http import HttpClient
from workspaces.providers.trackers import api_address, external_id, required, subject, token

PAGE_SIZE = 100
MAX_PAGES = 2000  # 200,000 issues: more is not one project but a mistake in the key
FIELDS = "summary,status,description,updated"
# ADF nodes whose children are runs of one line (the others hold blocks, a line each).
INLINE_CONTAINERS = {"paragraph", "heading", "codeBlock"}


class JiraTracker:
    label = "Jira Cloud REST API v3 (search/jql)"
    incremental = True

    def items(
        self, connection: WorkConnection, *, updated_since: datetime | None = None
    ) -> Iterator[WorkItemData]:
        required(connection, connection.api_url, "Jira site (API address)")
        key = external_id(connection)
        email = required(connection, connection.account, "account email")
        address = api_address(connection)
        site = address.url
        secret = token(connection, address)
        basic = base64.b64encode(f"{email}:{secret}".encode()).decode()
        params: dict[str, Any] = {"jql": jql(key, updated_since), "fields": FIELDS, "maxResults": PAGE_SIZE}
        with HttpClient(
            base_url=f"{site}/rest/api/3/",
            subject=subject(connection),
            host_name="Jira",
            headers={"Authorization": f"Basic {basic}", "Accept": "application/json"},
            secrets=(secret, basic),
        ) as client:
            for _ in range(MAX_PAGES):
                data = client.get("search/jql", params=params).data
                issues = data.get("issues") if isinstance(data, dict) else None
                if not isinstance(issues, list):
                    raise ProviderAnswerInvalid(
                        f"Jira's search answer for {subject(connection)} has no issue list."
                    )
                for issue in issues:
                    yield _item(issue, site, connection)
                next_token = data.get("nextPageToken")
                if not next_token or data.get("isLast") is True:
                    return
                params = {**params, "nextPageToken": next_token}
        raise ProviderAnswerInvalid(
            f"Jira has more than {MAX_PAGES} pages of issues for {subject(connection)}."
        )


def jql(key: str, updated_since: datetime | None, now: datetime | None = None) -> str:
    query = f'project = "{key}"'
    if updated_since is not None:
        minutes = max(1, math.ceil(((now or timezone.now()) - updated_since).total_seconds() / 60))
        query += f" AND updated >= -{minutes}m"
    return query + " ORDER BY updated ASC"


def _item(issue: Any, site: str, connection: WorkConnection) -> WorkItemData:
    fields = issue.get("fields") if isinstance(issue, dict) else None
    key = issue.get("key") if isinstance(issue, dict) else None
    if not isinstance(fields, dict) or not isinstance(key, str):
        raise ProviderAnswerInvalid(
            f"Jira returned an issue without key or fields for {subject(connection)}."
        )
    status = fields.get("status")
    return WorkItemData(
        external_id=key,
        title=str(fields.get("summary") or ""),
        status=str(status.get("name", "")) if isinstance(status, dict) else "",
        description=adf_text(fields.get("description")),
        url=f"{site}/browse/{key}",
        updated_at=parse_datetime(str(fields.get("updated") or "")),
    )


def adf_text(node: Any) -> str:
    """The plain text of an Atlassian Document Format node: its text runs, a block a line."""
    if isinstance(node, str):
        return node
    if not isinstance(node, dict):
        return ""
    if node.get("type") == "text":
        return str(node.get("text", ""))
    if node.get("type") == "hardBreak":
        return "\n"
    children = node.get("content")
    parts = [adf_text(child) for child in children] if isinstance(children, list) else []
    if node.get("type") in INLINE_CONTAINERS:
        return "".join(parts)
    return "\n".join(part for part in parts if part)
