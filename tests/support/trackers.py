"""Local stand-ins for the work trackers' APIs, served by pytest-httpserver, answering as the
providers do: Jira Cloud's ``GET /rest/api/3/search/jql`` (``nextPageToken`` paging), ClickUp's
``GET /api/v2/list/{id}/task`` (``page`` paging, ``last_page``), Monday's GraphQL
``items_page``/``next_items_page`` (cursor paging). Each checks the credential the way its
provider does, and gives answers that go wrong on request (``trouble``: 429, 500, malformed
JSON ...). Items are kept in dicts shaped like the provider's own JSON."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

JIRA_EMAIL = "bot@acme.example"
JIRA_TOKEN = "jira-api-token-ATATT3xFfGF0"
CLICKUP_TOKEN = "pk_4321_CLICKUPTOKEN0123456789"
MONDAY_TOKEN = "eyJhbGciOiJIUzI1NiJ9.monday-api-token"

Trouble = tuple[int, dict[str, str], bytes]


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data), status=status, headers=headers or {}, content_type="application/json")


@dataclass
class _Fake:
    server: HTTPServer
    page_size: int = 2
    # Answers to give instead of the real one, first in first out: (status, headers, body).
    trouble: list[Trouble] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url_for("/").rstrip("/")

    def _troubled(self) -> Response | None:
        if not self.trouble:
            return None
        status, headers, body = self.trouble.pop(0)
        return Response(body, status=status, headers=headers, content_type="application/json")


# --- Jira Cloud ------------------------------------------------------------------------------


@dataclass
class FakeJira(_Fake):
    """``GET /rest/api/3/search/jql?jql=project = "PAY" [AND updated >= -Nm] ORDER BY …``."""

    issues: list[dict[str, Any]] = field(default_factory=list)
    # A host that pages for ever: every page names a next one, of issues never seen before.
    endless: bool = False

    def __post_init__(self) -> None:
        self.server.expect_request("/rest/api/3/search/jql", method="GET").respond_with_handler(self.handle)

    def add_issue(
        self, key: str, summary: str, *, updated: datetime, status: str = "To Do", text: str = ""
    ) -> dict:
        number = int(key.split("-")[1])
        issue = {
            "id": str(10000 + number),
            "key": key,
            "self": f"{self.url}/rest/api/3/issue/{10000 + number}",
            "fields": {
                "summary": summary,
                "status": {"name": status},
                "updated": updated.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
                "description": _adf(text) if text else None,
            },
        }
        self.issues = [i for i in self.issues if i["key"] != key] + [issue]
        return issue

    def delete(self, key: str) -> None:
        self.issues = [issue for issue in self.issues if issue["key"] != key]

    def handle(self, request: Request) -> Response:
        self.requests.append(request)
        expected = base64.b64encode(f"{JIRA_EMAIL}:{JIRA_TOKEN}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {expected}":
            # Echoing the credential (as a careless proxy might) proves the client keeps it out
            # of every error; the other stand-ins do the same.
            return _json({"errorMessages": [f"Not authorised: {request.headers.get('Authorization')}"]}, 401)
        if troubled := self._troubled():
            return troubled
        jql = request.args.get("jql", "")
        project = re.search(r'project = "([A-Z][A-Z0-9_]*)"', jql)
        minutes = re.search(r"updated >= -(\d+)m", jql)
        chosen = [i for i in self.issues if project and i["key"].startswith(f"{project.group(1)}-")]
        if minutes:
            since = datetime.now(UTC) - timedelta(minutes=int(minutes.group(1)))
            chosen = [i for i in chosen if _jira_time(i["fields"]["updated"]) >= since]
        chosen.sort(key=lambda i: (i["fields"]["updated"], i["key"]))
        start = (
            int(base64.b64decode(request.args["nextPageToken"]).decode())
            if "nextPageToken" in request.args
            else 0
        )
        size = min(int(request.args.get("maxResults", "50")), self.page_size)
        if self.endless:
            updated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
            page = [
                {"key": f"PAY-{n}", "fields": {"summary": f"Issue {n}", "updated": updated}}
                for n in range(start + 1, start + size + 1)
            ]
            token = base64.b64encode(str(start + size).encode()).decode()
            return _json({"issues": page, "isLast": False, "nextPageToken": token})
        page = chosen[start : start + size]
        body: dict[str, Any] = {"issues": page, "isLast": start + size >= len(chosen)}
        if start + size < len(chosen):
            body["nextPageToken"] = base64.b64encode(str(start + size).encode()).decode()
        return _json(body)


def _adf(text: str) -> dict:
    """Atlassian Document Format: what Jira's v3 API gives as a description."""
    return {
        "type": "doc",
        "version": 1,
        "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": line}]} for line in text.splitlines()
        ],
    }


def _jira_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")


# --- ClickUp ---------------------------------------------------------------------------------


@dataclass
class FakeClickUp(_Fake):
    """``GET /api/v2/list/{list_id}/task?page=N&include_closed=true&date_updated_gt=…``."""

    list_id: str = "900100"
    tasks: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server.expect_request(
            re.compile(r"^/api/v2/list/[^/]+/task$"), method="GET"
        ).respond_with_handler(self.handle)

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v2"

    def add_task(
        self, task_id: str, name: str, *, updated: datetime, status: str = "to do", closed: bool = False
    ) -> dict:
        task = {
            "id": task_id,
            "custom_id": None,
            "name": name,
            "text_content": f"About {name}",
            "description": f"About {name}",
            "status": {"status": status, "type": "closed" if closed else "open"},
            "url": f"https://app.clickup.com/t/{task_id}",
            "date_updated": str(int(updated.timestamp() * 1000)),
        }
        self.tasks = [t for t in self.tasks if t["id"] != task_id] + [task]
        return task

    def delete(self, task_id: str) -> None:
        self.tasks = [task for task in self.tasks if task["id"] != task_id]

    def handle(self, request: Request) -> Response:
        self.requests.append(request)
        if request.headers.get("Authorization") != CLICKUP_TOKEN:
            return _json(
                {"err": f"Token invalid: {request.headers.get('Authorization')}", "ECODE": "OAUTH_025"}, 401
            )
        if troubled := self._troubled():
            return troubled
        if request.path != f"/api/v2/list/{self.list_id}/task":
            return _json({"err": "List not found", "ECODE": "ITEM_013"}, 404)
        chosen = [
            t
            for t in self.tasks
            if request.args.get("include_closed") == "true" or t["status"]["type"] != "closed"
        ]
        if "date_updated_gt" in request.args:
            chosen = [t for t in chosen if int(t["date_updated"]) > int(request.args["date_updated_gt"])]
        page = int(request.args.get("page", "0"))
        chunk = chosen[page * self.page_size : (page + 1) * self.page_size]
        return _json({"tasks": chunk, "last_page": (page + 1) * self.page_size >= len(chosen)})


# --- Monday ----------------------------------------------------------------------------------


@dataclass
class FakeMonday(_Fake):
    """``POST /v2`` with a GraphQL query: ``boards(ids:) { items_page(limit:) }`` then
    ``next_items_page(cursor:, limit:)``."""

    board_id: str = "1234567890"
    items: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server.expect_request("/v2", method="POST").respond_with_handler(self.handle)

    @property
    def api_url(self) -> str:
        return f"{self.url}/v2"

    def add_item(self, item_id: str, name: str, *, updated: datetime, status: str = "Working on it") -> dict:
        item = {
            "id": item_id,
            "name": name,
            "state": "active",
            "updated_at": updated.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "url": f"https://acme.monday.com/boards/{self.board_id}/pulses/{item_id}",
            "group": {"title": "This week"},
            "column_values": [{"id": "status", "text": status}],
        }
        self.items = [i for i in self.items if i["id"] != item_id] + [item]
        return item

    def delete(self, item_id: str) -> None:
        self.items = [item for item in self.items if item["id"] != item_id]

    def handle(self, request: Request) -> Response:
        self.requests.append(request)
        if request.headers.get("Authorization") != MONDAY_TOKEN:
            return _json(
                {
                    "errors": [
                        {
                            "message": f"Not Authenticated: {request.headers.get('Authorization')}",
                            "extensions": {"code": "UNAUTHENTICATED", "status_code": 401},
                        }
                    ]
                },
                401,
            )
        if troubled := self._troubled():
            return troubled
        body = json.loads(request.get_data())
        query, variables = body["query"], body.get("variables", {})
        if "next_items_page" in query:
            start = int(variables["cursor"].removeprefix("cursor-"))
            return _json({"data": {"next_items_page": self._page(start, variables["limit"])}})
        if [str(b) for b in variables.get("board", [])] != [self.board_id]:
            return _json({"data": {"boards": []}})
        return _json({"data": {"boards": [{"items_page": self._page(0, variables["limit"])}]}})

    def _page(self, start: int, limit: int) -> dict:
        size = min(limit, self.page_size)
        chunk = self.items[start : start + size]
        cursor = f"cursor-{start + size}" if start + size < len(self.items) else None
        return {"cursor": cursor, "items": chunk}
