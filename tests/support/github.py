"""A local stand-in for GitHub's REST API, served by pytest-httpserver: the endpoints the
code host uses, answering as GitHub does (``Link`` paging, ETags and 304, JSON shapes), and
answers that go wrong on request (429, 500, malformed JSON, 401)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

TOKEN = "ghp_test-token-0123456789"


@dataclass
class FakeGitHub:
    server: HTTPServer
    full_name: str = "acme/api"
    prefix: str = ""  # "/api/v3" for GitHub Enterprise
    page_size: int = 2
    pulls: list[dict[str, Any]] = field(default_factory=list)
    check_runs: dict[str, list[dict]] = field(default_factory=dict)  # by commit
    statuses: dict[str, list[dict]] = field(default_factory=dict)  # by commit
    reviews: dict[int, list[dict]] = field(default_factory=dict)  # by pull request number
    files: dict[int, list[str]] = field(default_factory=dict)
    # Answers to give instead of the real one, first in first out: (status, headers, body).
    trouble: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server.expect_request(re.compile(f"^{re.escape(self.prefix)}/repos/")).respond_with_handler(
            self.handle
        )

    @property
    def api_url(self) -> str:
        return self.server.url_for(self.prefix or "/").rstrip("/")

    def add_pull(
        self, number: int, *, updated_at: str, state: str = "open", merged_at: str | None = None, **extra: Any
    ) -> dict:
        pull = {
            "number": number,
            "title": extra.pop("title", f"Change {number}"),
            "body": extra.pop("body", ""),
            "state": state,
            "user": {"login": extra.pop("author", "ada")},
            "head": {"sha": extra.pop("head_sha", f"{number:040x}")},
            "merged_at": merged_at,
            "updated_at": updated_at,
            **extra,
        }
        self.pulls = [p for p in self.pulls if p["number"] != number] + [pull]
        return pull

    def paths(self) -> list[str]:
        return [request.full_path.rstrip("?") for request in self.requests]

    # --- the server side ---------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        self.requests.append(request)
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _json({"message": "Bad credentials"}, 401)
        if self.trouble:
            status, headers, body = self.trouble.pop(0)
            return Response(body, status=status, headers=headers, content_type="application/json")
        path = request.path.removeprefix(f"{self.prefix}/repos/{self.full_name}/")
        if path == "pulls":
            return self._pull_list(request)
        if match := re.fullmatch(r"pulls/(\d+)", path):
            pull = self._pull(int(match.group(1)))
            return _json(pull) if pull else _json({"message": "Not Found"}, 404)
        if match := re.fullmatch(r"pulls/(\d+)/files", path):
            names = self.files.get(int(match.group(1)), [])
            return self._paged(request, [{"filename": name} for name in names])
        if match := re.fullmatch(r"pulls/(\d+)/reviews", path):
            return self._paged(request, self.reviews.get(int(match.group(1)), []))
        if match := re.fullmatch(r"commits/(\w+)/check-runs", path):
            runs = self.check_runs.get(match.group(1), [])
            return _json({"total_count": len(runs), "check_runs": runs})
        if match := re.fullmatch(r"commits/(\w+)/status", path):
            statuses = self.statuses.get(match.group(1), [])
            return _json({"state": "pending" if not statuses else "success", "statuses": statuses})
        return _json({"message": "Not Found"}, 404)

    def _pull(self, number: int) -> dict | None:
        return next((pull for pull in self.pulls if pull["number"] == number), None)

    def _pull_list(self, request: Request) -> Response:
        state = request.args.get("state", "open")
        chosen = [p for p in self.pulls if state == "all" or p["state"] == state]
        chosen.sort(key=lambda p: p["updated_at"], reverse=request.args.get("direction") == "desc")
        listed = [
            {k: v for k, v in p.items() if k not in {"additions", "deletions", "changed_files"}}
            for p in chosen
        ]
        return self._paged(request, listed)

    def _paged(self, request: Request, items: list[dict]) -> Response:
        page = int(request.args.get("page", "1"))
        chunk = items[(page - 1) * self.page_size : page * self.page_size]
        body = json.dumps(chunk).encode()
        etag = f'W/"{hashlib.sha256(body).hexdigest()[:20]}"'
        if request.headers.get("If-None-Match") == etag:
            return Response(status=304, headers={"ETag": etag})
        headers = {"ETag": etag, "X-RateLimit-Remaining": "4999"}
        if page * self.page_size < len(items):
            args = {**request.args.to_dict(), "page": str(page + 1)}
            query = "&".join(f"{key}={value}" for key, value in args.items())
            headers["Link"] = f'<{self.server.url_for(request.path)}?{query}>; rel="next"'
        return Response(body, headers=headers, content_type="application/json")


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status=status, content_type="application/json")
