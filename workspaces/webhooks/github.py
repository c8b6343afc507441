"""``POST /webhooks/github/``: GitHub's repository webhooks.

Verified by ``X-Hub-Signature-256`` (``sha256=`` + HMAC-SHA256 of the raw body under
``GITHUB_WEBHOOK_SECRET``); the delivery id is ``X-GitHub-Delivery``, the event
``X-GitHub-Event``.

| event | queues |
|---|---|
| ``push`` to the repository's default branch | ``repository.ingest`` |
| ``pull_request`` (any action) | ``pullrequest.sync`` |
| ``check_run``, ``check_suite``, ``pull_request_review``, ``status`` on a supervised pull request | ``checks.sync`` |
| ``ping`` | nothing (answered 200) |
| anything else | nothing (acknowledged) |

The repository is found by the delivery's ``repository``: the host of its ``html_url`` and
its ``full_name`` against each connected repository's URL (HTTPS, SSH or ``git@host:``
form), or its full name where one was set. Every workspace that connected the repository
gets its job.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse

from jobs import enqueue
from workspaces import job_types
from workspaces.models import PullRequest, Repository, WebhookDelivery
from workspaces.services import triggers
from workspaces.webhooks import payloads
from workspaces.webhooks.deliveries import Routed
from workspaces.webhooks.verification import signature_matches

# ``status``: a CI that reports through the Statuses API (``checks.sync`` reads the
# combined status); it names the commit, which names the pull request.
CHECK_EVENTS = {"check_run", "check_suite", "pull_request_review", "status"}
SCP_LIKE = re.compile(r"^[\w.-]+@(?P<host>[\w.-]+):(?P<path>.+)$")

Outcome = WebhookDelivery.Outcome


class GitHubHook:
    provider = WebhookDelivery.Provider.GITHUB
    secret_setting = "GITHUB_WEBHOOK_SECRET"

    def before_verification(self, request: HttpRequest, body: bytes) -> HttpResponse | None:
        return None

    def verify(self, request: HttpRequest, body: bytes) -> bool:
        return signature_matches(
            body,
            request.headers.get("X-Hub-Signature-256", ""),
            settings.GITHUB_WEBHOOK_SECRET,
            prefix="sha256=",
        )

    def bound(self, request: HttpRequest, body: bytes, payload: dict[str, Any]) -> bool:
        return True  # one secret covers every delivery

    def event(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return request.headers.get("X-GitHub-Event", "")

    def delivery_id(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return request.headers.get("X-GitHub-Delivery", "")

    def route(self, event: str, payload: dict[str, Any]) -> Routed:
        if event == "ping":
            return Routed(Outcome.IGNORED, "Ping: the webhook reaches this platform.", status=200)
        if event not in {"push", "pull_request", *CHECK_EVENTS}:
            return Routed(Outcome.IGNORED, f"{event or 'An unnamed'} event needs no sync.")
        full_name = payloads.text(payload, "repository", "full_name")
        repositories = connected_repositories(payloads.obj(payload, "repository"))
        if not repositories:
            return Routed(Outcome.UNKNOWN, f"No connected repository is {full_name or 'named'}.")
        if event == "push":
            return _push(payload, repositories, full_name)
        if event == "pull_request":
            jobs = [triggers.request_pull_request_sync(repo) for repo in repositories]
            number = payloads.text(payload, "pull_request", "number")
            return Routed(Outcome.QUEUED, f"Pull request #{number} of {full_name}: sync queued.", jobs)
        return _checks(event, payload, repositories, full_name)


def _push(payload: dict[str, Any], repositories: list[Repository], full_name: str) -> Routed:
    ref = payloads.text(payload, "ref")
    default_branch = payloads.text(payload, "repository", "default_branch")
    if payload.get("deleted") is True:
        return Routed(Outcome.IGNORED, f"{ref} of {full_name} was deleted; nothing to fetch.")
    if not default_branch or ref != f"refs/heads/{default_branch}":
        return Routed(
            Outcome.IGNORED,
            f"A push to {ref or 'no ref'} of {full_name}, not to its default branch {default_branch or '?'}.",
        )
    jobs = [triggers.request_ingest(repo) for repo in repositories]
    return Routed(Outcome.QUEUED, f"A push to {default_branch} of {full_name}: ingest queued.", jobs)


def _checks(event: str, payload: dict[str, Any], repositories: list[Repository], full_name: str) -> Routed:
    if event == "pull_request_review":
        numbers = {payloads.number(payload, "pull_request", "number")}
        head_sha = payloads.text(payload, "pull_request", "head", "sha")
    elif event == "status":
        numbers, head_sha = set(), payloads.text(payload, "sha")
    else:
        numbers = {
            payloads.number(pull, "number") for pull in payloads.objects(payload, event, "pull_requests")
        }
        head_sha = payloads.text(payload, event, "head_sha")
    wanted = Q(number__in=[n for n in numbers if n is not None])
    if head_sha:
        # A fork's pull request is not listed on its checks: its head commit names it.
        wanted |= Q(head_sha=head_sha)
    supervised = PullRequest.objects.filter(wanted, repository__in=repositories, supervised=True)
    repository_ids = sorted(set(supervised.values_list("repository_id", flat=True)))
    if not repository_ids:
        return Routed(Outcome.IGNORED, f"{event} on {full_name} concerns no supervised pull request.")
    jobs = [enqueue(job_types.SYNC_CHECKS, {"repository_id": pk}) for pk in repository_ids]
    return Routed(
        Outcome.QUEUED, f"{event} on a supervised pull request of {full_name}: checks sync queued.", jobs
    )


def connected_repositories(data: dict[str, Any]) -> list[Repository]:
    """The connected repositories a delivery's ``repository`` object names."""
    full_name = payloads.text(data, "full_name").strip("/")
    host = (urlsplit(payloads.text(data, "html_url")).hostname or "").lower()
    if not full_name or not host:
        return []
    # The LIKE narrows the rows; the exact comparison below decides. A repository whose
    # owner/name was set by hand (a URL that does not say it) is taken at its word.
    candidates = Repository.objects.filter(Q(url__icontains=full_name) | Q(full_name__iexact=full_name))
    return [
        repo
        for repo in candidates.order_by("pk")
        if url_names(repo.url) == (host, full_name.lower())
        or (repo.full_name.strip("/").lower() == full_name.lower() and url_names(repo.url)[0] in ("", host))
    ]


def url_names(url: str) -> tuple[str, str]:
    """``(host, owner/name)`` of a repository URL, lower-cased: ``https://github.com/acme/api.git``,
    ``ssh://git@github.com/acme/api``, ``git@github.com:acme/api.git`` all read
    ``("github.com", "acme/api")``; ``("", "")`` for a URL that names no hosted repository."""
    match = SCP_LIKE.match(url)
    if match and "://" not in url:
        host, path = match.group("host"), match.group("path")
    else:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https", "ssh", "git"}:
            return "", ""
        host, path = parts.hostname or "", parts.path
    name = path.strip("/").removesuffix(".git").strip("/")
    if not host or name.count("/") != 1:
        return "", ""
    return host.lower(), name.lower()
