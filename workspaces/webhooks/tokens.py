"""Tokens that sign no body (monday's JWT), bound to the first body they come with.

A captured token would otherwise carry any body until it expires. The first delivery with a
token records it with a hash of its body; the same token is then accepted again only with
that body (the provider's retry of the same delivery). Rows go once the token has expired.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import jwt
from django.db import IntegrityError, transaction
from django.utils import timezone

from workspaces.models import WebhookToken
from workspaces.webhooks.verification import LEEWAY


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bind(provider: str, token: str, body: bytes) -> bool:
    """Whether ``token`` (already verified) may carry ``body``: it is new, or was first seen
    with this same body."""
    claims = jwt.decode(token, options={"verify_signature": False})  # verified before
    expires_at = datetime.fromtimestamp(float(claims["exp"]), UTC) + timedelta(seconds=LEEWAY)
    fingerprint, body_sha256 = _sha256(token.encode()), _sha256(body)
    try:
        with transaction.atomic():
            row, _ = WebhookToken.objects.get_or_create(
                provider=provider,
                token_sha256=fingerprint,
                defaults={"body_sha256": body_sha256, "expires_at": expires_at},
            )
    except IntegrityError:  # a twin delivery inserted it first
        row = WebhookToken.objects.get(provider=provider, token_sha256=fingerprint)
    return row.body_sha256 == body_sha256


def prune(now: datetime | None = None) -> int:
    """Forget the tokens that have expired (they verify no more); returns how many."""
    return WebhookToken.objects.filter(expires_at__lt=now or timezone.now()).delete()[0]
