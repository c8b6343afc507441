"""``POST /webhooks/clickup/``: ClickUp's webhooks (``POST /api/v2/team/{team_id}/webhook``).

ClickUp signs each delivery with the secret its registration returned: ``X-Signature`` is
the hex HMAC-SHA256 of the raw body. Every ClickUp webhook has its own secret, so
``CLICKUP_WEBHOOK_SECRET`` lists them all, each bound to its webhook as
``<webhook id>:<secret>``: a delivery verifies only with a secret of the webhook it names
(``webhook_id``), so one webhook's secret cannot speak for another's connections. ClickUp
sends no delivery id; a hash of the body stands in (its retries send the same body).

Every ``task*`` event queues ``workmanagement.sync`` for the active ClickUp connections whose
webhook id is the delivery's ``webhook_id``; ``taskDeleted`` and ``taskMoved`` ask for a full
listing, which is what finds tasks gone from the list. Other events need no sync.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from workspaces.models import WebhookDelivery, WorkConnection
from workspaces.services.work_items import request_syncs
from workspaces.webhooks import payloads
from workspaces.webhooks.deliveries import Routed
from workspaces.webhooks.verification import signature_matches

logger = logging.getLogger("workspaces.webhooks")
Outcome = WebhookDelivery.Outcome
GONE_EVENTS = {"taskDeleted", "taskMoved"}


def webhook_secrets() -> dict[str, list[str]]:
    """``CLICKUP_WEBHOOK_SECRET`` read as webhook id → its secrets (the current one first).
    An entry without its webhook id verifies nothing."""
    bound: dict[str, list[str]] = {}
    for entry in settings.CLICKUP_WEBHOOK_SECRET:
        webhook_id, separator, secret = entry.partition(":")
        if separator and webhook_id and secret:
            bound.setdefault(webhook_id, []).append(secret)
    return bound


class ClickUpHook:
    provider = WebhookDelivery.Provider.CLICKUP
    secret_setting = "CLICKUP_WEBHOOK_SECRET"

    def before_verification(self, request: HttpRequest, body: bytes) -> HttpResponse | None:
        return None

    def verify(self, request: HttpRequest, body: bytes) -> bool:
        every = [secret for secrets in webhook_secrets().values() for secret in secrets]
        verified = signature_matches(body, request.headers.get("X-Signature", ""), every)
        if not verified and any(":" not in entry for entry in settings.CLICKUP_WEBHOOK_SECRET):
            logger.warning(
                "CLICKUP_WEBHOOK_SECRET holds a secret without its webhook id, which verifies "
                "nothing: list each as <webhook id>:<secret>."
            )
        return verified

    def bound(self, request: HttpRequest, body: bytes, payload: dict[str, Any]) -> bool:
        secrets = webhook_secrets().get(payloads.text(payload, "webhook_id"), [])
        return signature_matches(body, request.headers.get("X-Signature", ""), secrets)

    def event(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return payloads.text(payload, "event")

    def delivery_id(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return ""

    def route(self, event: str, payload: dict[str, Any]) -> Routed:
        if not event.startswith("task"):
            return Routed(Outcome.IGNORED, f"{event or 'An unnamed'} event needs no sync.")
        webhook_id = payloads.text(payload, "webhook_id")
        connections = list(
            WorkConnection.objects.filter(
                kind=WorkConnection.Kind.CLICKUP, active=True, webhook_id=webhook_id
            ).order_by("pk")
            if webhook_id
            else []
        )
        if not connections:
            return Routed(Outcome.UNKNOWN, f"No active ClickUp connection has webhook {webhook_id or '?'}.")
        jobs = request_syncs(connections, full_listing=event in GONE_EVENTS)
        task = payloads.text(payload, "task_id")
        return Routed(Outcome.QUEUED, f"{event} {task}: sync queued.", jobs)
