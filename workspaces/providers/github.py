"""The code host on GitHub's REST API (github.com, or GitHub Enterprise at ``GITHUB_API_URL``).

Authentication is a bearer token (``GITHUB_TOKEN``): a personal or machine-user token, or a
GitHub App installation token minted outside and refreshed in the environment (this module
does not mint App tokens). Every call follows the convention of ``http.py``.

- ``pull_requests``: ``GET /repos/{owner}/{name}/pulls?state=all&sort=updated&direction=desc``,
  page by page, stopping at the first pull request not updated since the last sync. The
  first page is asked for with the ETag of the last sync: a 304 means nothing changed, and
  GitHub does not count it against the rate limit.
- ``checks``: check runs and the combined commit status of the head commit, and the reviews
  (the approvers are the reviewers whose latest verdict is an approval).
- ``merged_pull_requests``: the most recently merged pull requests, each read on its own for
  its diff stats, with its changed files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.utils.dateparse import parse_datetime

from workspaces.errors import NotReady, ProviderAnswerInvalid
from workspaces.models import Repository
from workspaces.providers.base import ChecksData, PullRequestChanges, PullRequestData
from workspaces.providers.http import Answer, HttpClient

API_VERSION = "2022-11-28"
PER_PAGE = 100
# Changed files are one more request per pull request: read them for at most this many
# open pull requests per sync (the rest keep what an earlier sync read).
FILES_PER_SYNC = 30
MAX_FILES = 3000  # GitHub lists at most 3,000 files of a pull request
FAILED = {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "error"}
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:(?P<path>.+)$")
# What goes into a request's path: an owner/name of GitHub's form, a commit id.
FULL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
COMMIT = re.compile(r"^[0-9a-fA-F]{1,64}$")


class GitHubCodeHost:
    def __init__(self, api_url: str, token: str, *, transport: httpx.BaseTransport | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.transport = transport
        self.label = f"GitHub REST API at {self.api_url}"

    def client(self, repository: Repository) -> HttpClient:
        full_name = repository_full_name(repository)
        return HttpClient(
            base_url=f"{self.api_url}/repos/{full_name}/",
            subject=f"repository {full_name}",
            host_name="GitHub",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "job-platform",
            },
            transport=self.transport,
        )

    # --- pullrequest.sync -------------------------------------------------------------------

    def pull_requests(self, repository: Repository, cursor: Mapping[str, Any]) -> PullRequestChanges:
        since = _when(cursor.get("since"))
        params = {"state": "all", "sort": "updated", "direction": "desc", "per_page": PER_PAGE}
        pulls: list[PullRequestData] = []
        etag = ""
        with self.client(repository) as client:
            for index, page in enumerate(client.pages("pulls", params=params, etag=cursor.get("etag", ""))):
                if page.not_modified:
                    return PullRequestChanges(pulls=[], cursor=cursor, not_modified=True)
                if index == 0:
                    etag = page.etag
                fresh = [_pull(raw) for raw in _list(page)]
                # Sorted by update, newest first: the first one older than the cursor ends it.
                pulls += [
                    pull for pull in fresh if not (since and pull.updated_at and pull.updated_at < since)
                ]
                if since and any(pull.updated_at and pull.updated_at < since for pull in fresh):
                    break
            open_pulls = [pull for pull in pulls if pull.state == "open"][:FILES_PER_SYNC]
            files = {pull.number: self._files(client, pull.number) for pull in open_pulls}
        pulls = [_replace_files(pull, files.get(pull.number)) for pull in pulls]
        newest = max((pull.updated_at for pull in pulls if pull.updated_at), default=since)
        return PullRequestChanges(
            pulls=pulls,
            cursor={"etag": etag, "since": newest.isoformat() if newest else None},
        )

    # --- checks.sync ------------------------------------------------------------------------

    def checks(self, repository: Repository, number: int, head_sha: str = "") -> ChecksData:
        with self.client(repository) as client:
            if not head_sha:
                head_sha = _field(client.get(f"pulls/{int(number)}"), "head", "sha")
            if not COMMIT.match(str(head_sha)):
                # It goes into the next paths: only a commit id, never "../.." from an answer.
                raise ProviderAnswerInvalid(f"GitHub named no commit id for pull request #{number}.")
            runs: list[dict] = []
            for page in client.pages(f"commits/{head_sha}/check-runs", params={"per_page": PER_PAGE}):
                runs += _dicts(_field(page, "check_runs"))
            combined = client.get(f"commits/{head_sha}/status").data
            statuses = _dicts(combined.get("statuses", []) if isinstance(combined, dict) else None)
            reviews: list[dict] = []
            for page in client.pages(f"pulls/{number}/reviews", params={"per_page": PER_PAGE}):
                reviews += _dicts(page.data)
        checks = [
            {
                "kind": "check_run",
                "name": str(run.get("name", "")),
                "status": str(run.get("status", "")),
                "conclusion": str(run.get("conclusion") or ""),
                "url": str(run.get("html_url") or ""),
            }
            for run in runs
        ] + [
            {
                "kind": "status",
                "name": str(status.get("context", "")),
                "status": "completed" if status.get("state") != "pending" else "pending",
                "conclusion": str(status.get("state", "")),
                "url": str(status.get("target_url") or ""),
            }
            for status in statuses
        ]
        return ChecksData(ci_status=ci_status(checks), checks=checks, approvals=approvers(reviews))

    # --- capsules.retrospective ------------------------------------------------------------

    def merged_pull_requests(self, repository: Repository, limit: int) -> list[PullRequestData]:
        params = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": PER_PAGE}
        with self.client(repository) as client:
            closed: list[dict] = []
            # Recently updated closed pull requests, page by page, until enough were merged.
            for page in client.pages("pulls", params=params):
                closed += [raw for raw in _list(page) if raw.get("merged_at")]
                if len(closed) >= limit:
                    break
            closed.sort(key=lambda raw: (str(raw["merged_at"]), int(raw.get("number", 0))), reverse=True)
            merged = []
            for raw in closed[:limit]:
                detail = client.get(f"pulls/{int(raw['number'])}")
                if not isinstance(detail.data, dict):
                    raise ProviderAnswerInvalid(
                        f"GitHub answered pull request #{raw['number']} with no object."
                    )
                pull = _pull(detail.data)
                merged.append(_replace_files(pull, self._files(client, pull.number)))
        return merged

    def _files(self, client: HttpClient, number: int) -> tuple[str, ...]:
        names: list[str] = []
        for page in client.pages(f"pulls/{number}/files", params={"per_page": PER_PAGE}):
            names += [str(item.get("filename", "")) for item in _dicts(page.data)]
            if len(names) >= MAX_FILES:
                break
        return tuple(names[:MAX_FILES])


def repository_full_name(repository: Repository) -> str:
    """``owner/name`` on the code host: the repository's own, or read from its URL; only
    names of GitHub's form, since they go into every request's path."""
    name = _full_name(repository)
    if not FULL_NAME.match(name) or any(part in (".", "..") for part in name.split("/")):
        raise NotReady(
            f"Repository {repository.name!r} has no owner/name of GitHub's form (letters, digits, "
            "'-', '_', '.'); set its full name."
        )
    return name


def _full_name(repository: Repository) -> str:
    if repository.full_name:
        return repository.full_name.strip("/")
    url = repository.url
    match = SCP_LIKE.match(url)
    path = match.group("path") if match and "://" not in url else urlsplit(url).path
    parts = [part for part in path.strip("/").removesuffix(".git").split("/") if part]
    if len(parts) < 2:
        raise NotReady(
            f"Repository {repository.name!r} has no owner/name on the code host; set its full name."
        )
    return "/".join(parts[-2:])


def ci_status(checks: list[dict]) -> str:
    """One word for a commit's checks: failure beats pending beats success; "" when none ran."""
    if not checks:
        return ""
    if any(check["conclusion"] in FAILED for check in checks):
        return "failure"
    if any(check["status"] != "completed" for check in checks):
        return "pending"
    return "success"


def approvers(reviews: list[dict]) -> list[str]:
    """Reviewers whose latest verdict (approve, request changes, dismissed) is an approval."""
    verdicts: dict[str, str] = {}
    for review in reviews:
        state = str(review.get("state", "")).upper()
        login = str((review.get("user") or {}).get("login", ""))
        if login and state in {"APPROVED", "CHANGES_REQUESTED", "DISMISSED"}:
            verdicts[login] = state
    return sorted(login for login, state in verdicts.items() if state == "APPROVED")


def _pull(raw: Mapping[str, Any]) -> PullRequestData:
    try:
        merged_at = _when(raw.get("merged_at"))
        state = "merged" if merged_at else str(raw["state"])
        return PullRequestData(
            number=int(raw["number"]),
            title=str(raw.get("title") or ""),
            body=str(raw.get("body") or ""),
            author=str((raw.get("user") or {}).get("login", "")),
            state=state if state in {"open", "merged", "closed"} else "closed",
            head_sha=str((raw.get("head") or {}).get("sha", "")),
            merged_at=merged_at,
            updated_at=_when(raw.get("updated_at")),
            additions=raw.get("additions") if isinstance(raw.get("additions"), int) else None,
            deletions=raw.get("deletions") if isinstance(raw.get("deletions"), int) else None,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProviderAnswerInvalid(f"GitHub sent a pull request without {exc}: {str(raw)[:120]}.") from None


def _replace_files(pull: PullRequestData, files: tuple[str, ...] | None) -> PullRequestData:
    if files is None:
        return pull
    return replace(pull, changed_files=files)


def _list(answer: Answer) -> list[dict]:
    return _dicts(answer.data)


def _dicts(data: Any) -> list[dict]:
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ProviderAnswerInvalid(
            f"GitHub answered with {type(data).__name__} where a list of objects belongs."
        )
    return data


def _field(answer: Answer, *names: str) -> Any:
    value: Any = answer.data
    for name in names:
        if not isinstance(value, dict) or name not in value:
            raise ProviderAnswerInvalid(f"GitHub's answer has no {'.'.join(names)}.")
        value = value[name]
    return value


def _when(value: Any) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) and value else None
