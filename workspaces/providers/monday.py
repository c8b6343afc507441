"""monday.com, GraphQL API v2: the items of one board.

- ``POST {api}`` (``https://api.monday.com/v2``) with ``boards(ids: [$board]) { items_page(limit:
  500) { cursor items {…} } }``, then ``next_items_page(cursor:, limit: 500)`` while a cursor
  comes back (a cursor lives 60 minutes; a listing takes far less).
- Authentication: the API token in ``Authorization``; ``API-Version`` pins the schema.
- Errors inside a 200 answer (GraphQL's ``errors``) are read as the HTTP convention reads
  statuses: a complexity or rate limit (``COMPLEXITY_BUDGET_EXHAUSTED``,
  ``ComplexityException``, ``RATE_LIMIT_EXCEEDED``, ``DAILY_LIMIT_EXCEEDED``) reschedules the
  job for when monday says (``retry_in_seconds``, ``reset in N seconds``, or midnight UTC for
  the daily limit); a 401/403 or an unauthorised user fails at once naming the connection;
  anything else is an invalid answer.
- Always a full listing: monday's ``items_page`` filters by update time only by day, so
  every sync reads the board (500 items a request).
- Mapping: the item id is the item's id, ``name`` its title, the status column's text (else
  the group's title) its status, ``url`` its URL, ``updated_at`` its update time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils.dateparse import parse_datetime

from jobs import RetryLater
from workspaces.errors import ProviderAnswerInvalid, ProviderRefused
from workspaces.models import WorkConnection
from workspaces.providers.base import WorkItemData
from workspaces.providers.http import MAX_WAIT, HttpClient
from workspaces.providers.trackers import required, subject, token

API_URL = "https://api.monday.com/v2"
API_VERSION = "2025-04"
PAGE_SIZE = 500
MAX_PAGES = 1000
ITEM_FIELDS = "id name state updated_at url group { title } column_values(types: [status]) { text }"
FIRST_PAGE = (
    "query ($board: [ID!], $limit: Int!) { boards(ids: $board) { items_page(limit: $limit) "
    f"{{ cursor items {{ {ITEM_FIELDS} }} }} }} }}"
)
NEXT_PAGE = (
    "query ($cursor: String!, $limit: Int!) { next_items_page(cursor: $cursor, limit: $limit) "
    f"{{ cursor items {{ {ITEM_FIELDS} }} }} }}"
)
RATE_LIMITS = {
    "COMPLEXITY_BUDGET_EXHAUSTED",
    "ComplexityException",
    "RATE_LIMIT_EXCEEDED",
    "Rate Limit Exceeded",
}
DAILY_LIMIT = "DAILY_LIMIT_EXCEEDED"
REFUSALS = {"UNAUTHENTICATED", "UserUnauthorizedException", "Unauthorized", "USER_UNAUTHORIZED"}
RESET_IN = re.compile(r"reset in (\d+) seconds?")


class MondayTracker:
    label = "monday.com GraphQL API v2 (items_page of a board)"
    incremental = False

    def items(
        self, connection: WorkConnection, *, updated_since: datetime | None = None
    ) -> Iterator[WorkItemData]:
        board = required(connection, connection.external_id, "Monday board id")
        secret = token(connection)
        with HttpClient(
            base_url=connection.api_url or API_URL,
            subject=subject(connection),
            host_name="Monday",
            headers={"Authorization": secret, "API-Version": API_VERSION, "Accept": "application/json"},
            secrets=(secret,),
        ) as client:
            data = self._ask(client, connection, FIRST_PAGE, {"board": [board], "limit": PAGE_SIZE})
            boards = data.get("boards")
            if not isinstance(boards, list) or not boards or not isinstance(boards[0], dict):
                raise ProviderRefused(
                    f"Monday shows no board {board} to the token of {subject(connection)}: "
                    "check the board id and the token's access."
                )
            page = boards[0].get("items_page")
            for _ in range(MAX_PAGES):
                if not isinstance(page, dict) or not isinstance(page.get("items"), list):
                    raise ProviderAnswerInvalid(
                        f"Monday's items page for {subject(connection)} has no items."
                    )
                for item in page["items"]:
                    yield _item(item, connection)
                cursor = page.get("cursor")
                if not cursor:
                    return
                page = self._ask(client, connection, NEXT_PAGE, {"cursor": cursor, "limit": PAGE_SIZE}).get(
                    "next_items_page"
                )
        raise ProviderAnswerInvalid(
            f"Monday has more than {MAX_PAGES} pages of items for {subject(connection)}."
        )

    def _ask(
        self, client: HttpClient, connection: WorkConnection, query: str, variables: dict
    ) -> dict[str, Any]:
        answer = client.post("", json={"query": query, "variables": variables}).data
        if not isinstance(answer, dict):
            raise ProviderAnswerInvalid(
                f"Monday answered {subject(connection)} with something other than an object."
            )
        check_errors(answer, subject(connection), redact=client.redact)
        data = answer.get("data")
        if not isinstance(data, dict):
            raise ProviderAnswerInvalid(f"Monday's answer for {subject(connection)} has no data.")
        return data


def check_errors(
    answer: dict[str, Any],
    subject: str,
    now: datetime | None = None,
    redact: Callable[[str], str] = lambda text: text,
) -> None:
    """Raise what monday's in-body errors mean; nothing when there are none. ``redact``
    blanks the credential out of monday's words, should they repeat it."""
    errors = [e for e in answer.get("errors") or [] if isinstance(e, dict)]
    if "error_code" in answer:  # the older shape: one error at the top level
        errors.append(
            {
                "message": answer.get("error_message", ""),
                "extensions": {"code": answer["error_code"], "status_code": answer.get("status_code")},
            }
        )
    for error in errors:
        found = error.get("extensions")
        extensions: dict[str, Any] = found if isinstance(found, dict) else {}
        code = str(extensions.get("code") or "")
        message = redact(str(error.get("message") or code)[:200])
        now = now or datetime.now(UTC)
        if code in RATE_LIMITS or code == DAILY_LIMIT:
            raise RetryLater(
                f"Monday rate limit for {subject} ({code}).", at=_resume_at(code, extensions, message, now)
            )
        if code in REFUSALS or extensions.get("status_code") in (401, 403):
            raise ProviderRefused(
                f"Monday refused the token of {subject} ({message}). Check the token's access."
            )
    if errors:
        first = redact(str(errors[0].get("message") or "no message")[:200])
        raise ProviderAnswerInvalid(f"Monday answered {subject} with an error: {first}.")


def _resume_at(code: str, extensions: dict[str, Any], message: str, now: datetime) -> datetime:
    if code == DAILY_LIMIT:
        return (now + timedelta(days=1)).replace(hour=0, minute=0, second=5, microsecond=0)
    seconds = extensions.get("retry_in_seconds")
    if not isinstance(seconds, int | float):
        match = RESET_IN.search(message)
        seconds = int(match.group(1)) if match else 60
    # Any number (3e9, 1e30, JSON's Infinity) is a wait of at most MAX_WAIT.
    return now + min(timedelta(seconds=min(max(1.0, float(seconds)), 1e9)), MAX_WAIT)


def _item(item: Any, connection: WorkConnection) -> WorkItemData:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str | int):
        raise ProviderAnswerInvalid(f"Monday returned an item without an id for {subject(connection)}.")
    columns = [c for c in item.get("column_values") or [] if isinstance(c, dict) and c.get("text")]
    found = item.get("group")
    group: dict[str, Any] = found if isinstance(found, dict) else {}
    return WorkItemData(
        external_id=str(item["id"]),
        title=str(item.get("name") or ""),
        status=str(columns[0]["text"]) if columns else str(group.get("title") or ""),
        url=str(item.get("url") or ""),
        updated_at=parse_datetime(str(item.get("updated_at") or "")),
    )
