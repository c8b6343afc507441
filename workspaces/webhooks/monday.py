"""``POST /webhooks/monday/``: monday.com board webhooks of a monday app.

- The challenge: registering a webhook, monday posts ``{"challenge": "…"}`` and expects it
  back. It is answered before verification (API-registered webhooks send it unsigned), and
  records and queues nothing.
- Every other delivery carries ``Authorization``: a JWT signed (HS256) with the app's
  signing secret (``MONDAY_SIGNING_SECRET``), with ``exp`` and ``aud``, the URL monday posts
  to (``MONDAY_WEBHOOK_URL``; empty: this request's own URL). Verified with PyJWT.

The delivery id is the event's ``triggerUuid``. Every event of a board queues
``workmanagement.sync`` for the active Monday connections of that board (``boardId`` as the
connection's external id); deleting, archiving or moving an item asks for a full listing.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from workspaces.models import WebhookDelivery, WorkConnection
from workspaces.services.work_items import request_syncs
from workspaces.webhooks import payloads
from workspaces.webhooks.deliveries import Routed
from workspaces.webhooks.verification import jwt_matches

Outcome = WebhookDelivery.Outcome
# A challenge is a few dozen bytes: a larger body is not parsed before verification.
CHALLENGE_MAX_BYTES = 1024
GONE_WORDS = ("delete", "archive", "move")


class MondayHook:
    provider = WebhookDelivery.Provider.MONDAY
    secret_setting = "MONDAY_SIGNING_SECRET"

    def before_verification(self, request: HttpRequest, body: bytes) -> HttpResponse | None:
        if len(body) > CHALLENGE_MAX_BYTES or b"challenge" not in body:
            return None
        try:
            payload = json.loads(body)
        except ValueError:
            return None
        challenge = payload.get("challenge") if isinstance(payload, dict) else None
        if not isinstance(challenge, str) or set(payload) != {"challenge"}:
            return None
        return JsonResponse({"challenge": challenge})

    def verify(self, request: HttpRequest, body: bytes) -> bool:
        audience = settings.MONDAY_WEBHOOK_URL or request.build_absolute_uri(request.path)
        return jwt_matches(
            request.headers.get("Authorization", ""), settings.MONDAY_SIGNING_SECRET, audience=audience
        )

    def event(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return payloads.text(payload, "event", "type")

    def delivery_id(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return payloads.text(payload, "event", "triggerUuid")

    def route(self, event: str, payload: dict[str, Any]) -> Routed:
        board = payloads.text(payload, "event", "boardId")
        connections = list(
            WorkConnection.objects.filter(
                kind=WorkConnection.Kind.MONDAY, active=True, external_id=board
            ).order_by("pk")
            if board
            else []
        )
        if not connections:
            return Routed(Outcome.UNKNOWN, f"No active Monday connection is board {board or '?'}.")
        gone = any(word in event for word in GONE_WORDS)
        jobs = request_syncs(connections, full_listing=gone)
        item = payloads.text(payload, "event", "pulseId")
        return Routed(
            Outcome.QUEUED, f"{event or 'event'} on item {item} of board {board}: sync queued.", jobs
        )
