"""ClickUp, API v2: the tasks of one list.

- ``GET {api}/list/{list_id}/task`` with ``page`` (0, 1, …) until an answer says
  ``last_page`` (or lists no task); ``include_closed=true`` and ``subtasks=true`` so that the
  mirror holds what the list holds; ``order_by=created`` so that a task created during a
  listing does not shift the pages already read. An incremental sync adds
  ``date_updated_gt`` (Unix milliseconds). Archived tasks are not listed: they read as gone.
- Authentication: the API token (a personal ``pk_…`` token or an OAuth access token) in
  ``Authorization``, as ClickUp takes it, without a scheme.
- Mapping: the task id is the item's id, ``name`` its title, ``status.status`` its status,
  ``text_content`` (else ``description``) its text, ``url`` its URL, ``date_updated`` its
  update time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from workspaces.addresses import DEFAULT_API_URLS
from workspaces.errors import ProviderAnswerInvalid
from workspaces.models import WorkConnection
from workspaces.providers.base import WorkItemData
from workspaces.providers.http import HttpClient
from workspaces.providers.trackers import api_address, external_id, subject, token

API_URL = DEFAULT_API_URLS["clickup"]
MAX_PAGES = 2000  # ClickUp answers 100 tasks a page


class ClickUpTracker:
    label = "ClickUp API v2 (tasks of a list)"
    incremental = True

    def items(
        self, connection: WorkConnection, *, updated_since: datetime | None = None
    ) -> Iterator[WorkItemData]:
        list_id = external_id(connection)
        address = api_address(connection)
        secret = token(connection, address)
        params: dict[str, Any] = {"include_closed": "true", "subtasks": "true", "order_by": "created"}
        if updated_since is not None:
            params["date_updated_gt"] = int(updated_since.timestamp() * 1000)
        with HttpClient(
            base_url=f"{address.url}/",
            subject=subject(connection),
            host_name="ClickUp",
            headers={"Authorization": secret, "Accept": "application/json"},
            secrets=(secret,),
        ) as client:
            for page in range(MAX_PAGES):
                data = client.get(
                    f"list/{quote(list_id, safe='')}/task", params={**params, "page": page}
                ).data
                tasks = data.get("tasks") if isinstance(data, dict) else None
                if not isinstance(tasks, list):
                    raise ProviderAnswerInvalid(
                        f"ClickUp's task list for {subject(connection)} has no tasks."
                    )
                for task in tasks:
                    yield _item(task, connection)
                if not tasks or data.get("last_page") is True:
                    return
        raise ProviderAnswerInvalid(
            f"ClickUp has more than {MAX_PAGES} pages of tasks for {subject(connection)}."
        )


def _item(task: Any, connection: WorkConnection) -> WorkItemData:
    if not isinstance(task, dict) or not isinstance(task.get("id"), str):
        raise ProviderAnswerInvalid(f"ClickUp returned a task without an id for {subject(connection)}.")
    status = task.get("status")
    return WorkItemData(
        external_id=task["id"],
        title=str(task.get("name") or ""),
        status=str(status.get("status", "")) if isinstance(status, dict) else "",
        description=str(task.get("text_content") or task.get("description") or ""),
        url=str(task.get("url") or ""),
        updated_at=_from_millis(task.get("date_updated")),
    )


def _from_millis(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value) / 1000, UTC)
    except (TypeError, ValueError, OverflowError):
        return None
