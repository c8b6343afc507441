"""``POST /webhooks/monday/``: monday.com board webhooks of a monday app.

- The challenge: registering a webhook, monday posts ``{"challenge": "…"}`` and expects it
  back. It is answered before verification (API-registered webhooks send it unsigned), and
  records and queues nothing.
- Every other delivery carries ``Authorization``: a JWT signed (HS256) with the app's
  signing secret (``MONDAY_SIGNING_SECRET``), with ``exp`` and ``aud``, the URL monday posts
  to (``MONDAY_WEBHOOK_URL``; empty: this request's own URL), valid for at most
  ``MONDAY_WEBHOOK_TOKEN_MAX_AGE`` seconds. Verified with PyJWT. The token signs no body,
  so it is bound to the first body it came with (``tokens``): the same token with another
  body is refused.

The delivery id is the event's ``triggerUuid``. Every event of a board queues
``workmanagement.sync`` for the active Monday connections of that board (``boardId`` as the
connection's external id; a move, ``sourceBoardId`` and ``destBoardId``); deleting, archiving
or moving an item asks for a full listing.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from workspaces.models import WebhookDelivery, WorkConnection
from workspaces.services.work_items import request_syncs
from workspaces.webhooks import payloads, tokens
from workspaces.webhooks.deliveries import Routed
from workspaces.webhooks.verification import bearer, jwt_matches

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
            request.headers.get("Authorization", ""),
            settings.MONDAY_SIGNING_SECRET,
            audience=audience,
            max_lifetime=settings.MONDAY_WEBHOOK_TOKEN_MAX_AGE,
        )

    def bound(self, request: HttpRequest, body: bytes, payload: dict[str, Any]) -> bool:
        # The JWT signs no body: it is bound to the first body it comes with.
        return tokens.bind(self.provider, bearer(request.headers.get("Authorization", "")), body)

    def event(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return payloads.text(payload, "event", "type")

    def delivery_id(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        return payloads.text(payload, "event", "triggerUuid")

    def route(self, event: str, payload: dict[str, Any]) -> Routed:
        # Most events name their board ``boardId``; a move (``move_subitem``) names the
        # board it left and the one it reached instead.
        board = payloads.text(payload, "event", "boardId")
        source = payloads.text(payload, "event", "sourceBoardId")
        destination = payloads.text(payload, "event", "destBoardId")
        boards = [value for value in dict.fromkeys((board, source, destination)) if value]
        connections = list(
            WorkConnection.objects.filter(
                kind=WorkConnection.Kind.MONDAY, active=True, external_id__in=boards
            ).order_by("pk")
            if boards
            else []
        )
        named = "/".join(boards) or "?"
        if not connections:
            return Routed(Outcome.UNKNOWN, f"No active Monday connection is board {named}.")
        gone = any(word in event for word in GONE_WORDS)
        # The board an item left finds it gone only by a full listing.
        left = [c for c in connections if gone or c.external_id == source != destination]
        stayed = [c for c in connections if c not in left]
        jobs = request_syncs(left, full_listing=True) + request_syncs(stayed)
        item = payloads.text(payload, "event", "pulseId")
        return Routed(
            Outcome.QUEUED, f"{event or 'event'} on item {item} of board {named}: sync queued.", jobs
        )
