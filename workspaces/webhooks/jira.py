"""``POST /webhooks/jira/``: Jira Cloud admin webhooks (System → WebHooks, or
``POST /rest/webhooks/1.0/webhook``) registered with a secret.

Jira signs those with WebSub's scheme: ``X-Hub-Signature: sha256=`` + HMAC-SHA256 of the raw
body under the secret (``JIRA_WEBHOOK_SECRET``). Webhooks of Connect and OAuth apps carry a
JWT instead; this endpoint does not take them. The delivery id is
``X-Atlassian-Webhook-Identifier`` (the same on Jira's retries).

Every ``jira:issue_*`` event queues ``workmanagement.sync`` for each active Jira connection
of the issue's project (its key or id as the connection's external id) on the issue's site;
``jira:issue_deleted`` asks that sync for a full listing, which is what finds deletions; an
issue moved between projects (its changelog's ``project`` and ``Key`` items) also queues a
full listing of the old project's connections, which takes it out of their mirror.
Other events (comments, sprints, projects) are acknowledged and need no sync.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from workspaces.models import WebhookDelivery, WorkConnection
from workspaces.services.work_items import request_syncs
from workspaces.webhooks import payloads
from workspaces.webhooks.deliveries import Routed
from workspaces.webhooks.verification import signature_matches

Outcome = WebhookDelivery.Outcome


class JiraHook:
    provider = WebhookDelivery.Provider.JIRA
    secret_setting = "JIRA_WEBHOOK_SECRET"

    def before_verification(self, request: HttpRequest, body: bytes) -> HttpResponse | None:
        return None

    def verify(self, request: HttpRequest, body: bytes) -> bool:
        return signature_matches(
            body, request.headers.get("X-Hub-Signature", ""), settings.JIRA_WEBHOOK_SECRET, prefix="sha256="
        )

    def bound(self, request: HttpRequest, body: bytes, payload: dict[str, Any]) -> bool:
        return True  # one secret covers every delivery

    def event(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return payloads.text(payload, "webhookEvent")

    def delivery_id(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return request.headers.get("X-Atlassian-Webhook-Identifier", "")

    def route(self, event: str, payload: dict[str, Any]) -> Routed:
        if not event.startswith("jira:issue_"):
            return Routed(Outcome.IGNORED, f"{event or 'An unnamed'} event needs no sync.")
        project = payloads.obj(payload, "issue", "fields", "project")
        key, project_id = payloads.text(project, "key").upper(), payloads.text(project, "id")
        site = origin(payloads.text(payload, "issue", "self"))
        connections = _connections(site, key, project_id)
        # An issue moved from another project: that project's mirror loses it, which only a
        # full listing of its connections finds.
        moved_from = [c for c in _connections(site, *moved_from_project(payload)) if c not in connections]
        if not connections and not moved_from:
            return Routed(
                Outcome.UNKNOWN, f"No active Jira connection is project {key or project_id or '?'}."
            )
        deleted = event == "jira:issue_deleted"
        jobs = request_syncs(connections, full_listing=deleted) + request_syncs(moved_from, full_listing=True)
        issue = payloads.text(payload, "issue", "key")
        if moved_from:
            old = ", ".join(sorted({c.external_id for c in moved_from}))
            return Routed(Outcome.QUEUED, f"{event} {issue}, moved from {old} to {key}: syncs queued.", jobs)
        return Routed(Outcome.QUEUED, f"{event} {issue} in {key}: sync queued.", jobs)


def _connections(site: str, *projects: str) -> list[WorkConnection]:
    """The active Jira connections of these projects (keys or ids) on the issue's site."""
    named = [value for value in projects if value]
    if not named:
        return []
    return [
        connection
        for connection in WorkConnection.objects.filter(
            kind=WorkConnection.Kind.JIRA, active=True, external_id__in=named
        ).order_by("pk")
        if not connection.api_url or origin(connection.api_url) == site
    ]


def moved_from_project(payload: dict[str, Any]) -> tuple[str, ...]:
    """The project (id, key) an issue left, as the delivery's changelog tells it: a
    ``project`` item (``from``: the old project's id) and a ``Key`` item (``fromString``:
    the issue's old key, ``PAY-7``); () for an issue that did not move."""
    old: list[str] = []
    for item in payloads.objects(payload, "changelog", "items"):
        field = (payloads.text(item, "fieldId") or payloads.text(item, "field")).lower()
        if field == "project":
            old.append(payloads.text(item, "from"))
        elif field in ("key", "issuekey"):
            old.append(payloads.text(item, "fromString").rpartition("-")[0].upper())
    return tuple(value for value in old if value)


def origin(url: str) -> str:
    """``https://acme.atlassian.net`` of any URL on that site."""
    scheme, _, rest = url.partition("://")
    return f"{scheme.lower()}://{rest.split('/', 1)[0].lower()}" if rest else ""
