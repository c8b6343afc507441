"""What every webhook endpoint does, in this order, and nothing more:

1. refuse a body over ``WEBHOOK_MAX_BODY_BYTES`` (413) by its ``Content-Length`` before
   reading it, and read at most one byte more than the limit whatever it claims;
2. verify the delivery on the raw body (401, nothing recorded or queued, when it fails);
3. parse it (400 when it is not a JSON object, or nested deeper than
   ``WEBHOOK_MAX_DEPTH``), and check that the signature was made for what it names (401);
4. answer a delivery id seen before with 200 and queue nothing;
5. route it to jobs (each deduplicated by its type's key: per repository or connection) and
   record it, in one transaction; answer 202 (200 for a ping).

A provider module supplies the parts that differ (``Hook``): verification, event name,
delivery id, routing, and an optional answer before verification (Monday's challenge).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Protocol

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse

from workspaces.providers.text import storable
from workspaces.webhooks import deliveries, payloads
from workspaces.webhooks.deliveries import Routed

logger = logging.getLogger("workspaces.webhooks")


class Hook(Protocol):
    @property
    def provider(self) -> str:
        """A WebhookDelivery.Provider."""
        ...

    @property
    def secret_setting(self) -> str:
        """The setting that holds its secrets, for the log."""
        ...

    def verify(self, request: HttpRequest, body: bytes) -> bool: ...

    def bound(self, request: HttpRequest, body: bytes, payload: dict[str, Any]) -> bool:
        """Whether the verified signature was made for what the delivery names (ClickUp: a
        secret for its webhook; monday: a token for this body). True where a secret
        covers every delivery."""
        ...

    def event(self, request: HttpRequest, payload: dict[str, Any]) -> str: ...

    def delivery_id(self, request: HttpRequest, payload: dict[str, Any]) -> str:
        """The provider's id of this delivery, the same on its retries; "" when it sends none."""
        ...

    def route(self, event: str, payload: dict[str, Any]) -> Routed: ...

    def before_verification(self, request: HttpRequest, body: bytes) -> HttpResponse | None:
        """An answer that needs no verification (it queues and records nothing), or None."""
        ...


def receive(request: HttpRequest, hook: Hook) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    limit = settings.WEBHOOK_MAX_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > limit:
        return _answer(413, "refused", f"The body is over {limit} bytes (WEBHOOK_MAX_BODY_BYTES).")
    body = request.read(limit + 1)
    if len(body) > limit:
        return _answer(413, "refused", f"The body is over {limit} bytes (WEBHOOK_MAX_BODY_BYTES).")

    early = hook.before_verification(request, body)
    if early is not None:
        return early
    if not hook.verify(request, body):
        # No record: an unverified request must not be able to fill a table. The log says
        # enough for an operator whose secret is wrong, and never the signature itself.
        logger.warning(
            "Refused a %s webhook from %s: the signature is missing or does not match %s.",
            hook.provider,
            request.META.get("REMOTE_ADDR", "?"),
            hook.secret_setting,
        )
        return _answer(401, "refused", "The signature is missing or invalid.")

    try:
        payload = payloads.parse(body, max_depth=settings.WEBHOOK_MAX_DEPTH)
    except payloads.Unreadable as exc:
        return _answer(400, "refused", str(exc))
    if not hook.bound(request, body, payload):
        # Signed, but with a secret given for another webhook (or a token seen on another
        # body): as unverified as no signature at all.
        logger.warning(
            "Refused a %s webhook from %s: its signature was not made for what it names (%s).",
            hook.provider,
            request.META.get("REMOTE_ADDR", "?"),
            hook.secret_setting,
        )
        return _answer(401, "refused", "The signature was not made for this delivery.")

    event = storable(hook.event(request, payload))[:100]
    delivery_id = storable(hook.delivery_id(request, payload) or hashlib.sha256(body).hexdigest())[:200]
    if deliveries.seen(hook.provider, delivery_id):
        return _replayed(delivery_id)
    routed = deliveries.record_once(hook.provider, delivery_id, event, lambda: hook.route(event, payload))
    if routed is None:
        return _replayed(delivery_id)
    logger.info(
        "%s webhook %s (%s): %s. %s",
        hook.provider,
        delivery_id,
        event,
        routed.outcome,
        routed.detail,
    )
    return _answer(
        routed.status,
        routed.outcome,
        routed.detail,
        jobs=[{"id": job.pk, "type": job.type, "status": job.status} for job in routed.jobs],
    )


def _replayed(delivery_id: str) -> HttpResponse:
    return _answer(200, "repeat", f"Delivery {delivery_id} was received before; nothing is queued again.")


def _answer(status: int, outcome: str, detail: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"outcome": outcome, "detail": detail, **extra}, status=status)
