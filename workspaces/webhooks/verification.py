"""Is this delivery from the provider? Each check runs on the raw body, before anything
parses it, and compares in constant time.

Every function takes a list of secrets, the current one first and any being retired after
it (the settings are comma-separated lists), and tries each of them without stopping at the
first match, so the time taken does not say which one matched.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence

import jwt


def hmac_sha256_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_matches(body: bytes, received: str, secrets: Sequence[str], *, prefix: str = "") -> bool:
    """``received`` is ``prefix`` + the hex HMAC-SHA256 of ``body`` under one of ``secrets``.

    GitHub (``X-Hub-Signature-256``) and Jira (``X-Hub-Signature``) send ``sha256=<hex>``;
    ClickUp (``X-Signature``) sends the bare hex digest.
    """
    given = received.strip().encode("ascii", "replace")
    if not given or not secrets:
        return False
    matched = False
    for secret in secrets:
        expected = (prefix + hmac_sha256_hex(secret, body)).encode()
        matched |= hmac.compare_digest(expected, given)
    return matched


def bearer(authorization: str) -> str:
    """The token of ``Bearer <jwt>`` (or of the bare token)."""
    return authorization.strip().removeprefix("Bearer ").strip()


def jwt_matches(authorization: str, secrets: Sequence[str], *, audience: str, max_lifetime: float) -> bool:
    """``authorization`` (``Bearer <jwt>`` or the bare token) is an HS256 JWT signed with one
    of ``secrets``, not expired, addressed to ``audience`` (monday.com puts the URL it
    posts to in ``aud``), and valid for at most ``max_lifetime`` seconds: from now, and
    from its ``iat`` where it has one (a token that lives for years is refused)."""
    token = bearer(authorization)
    if not token or not secrets:
        return False
    matched = False
    for secret in secrets:
        try:
            claims = jwt.decode(
                token,
                secret,
                algorithms=["HS256"],  # never "none", never whatever the token's header asks for
                audience=audience,
                options={"require": ["exp", "aud"]},
                leeway=LEEWAY,
            )
        except jwt.InvalidTokenError:
            continue
        matched |= _short_lived(claims, max_lifetime)
    return matched


#: Seconds of clock difference allowed between the provider and us.
LEEWAY = 30


def _short_lived(claims: dict, max_lifetime: float) -> bool:
    expires, issued = claims.get("exp"), claims.get("iat")
    if not isinstance(expires, int | float) or isinstance(expires, bool):
        return False
    if expires - time.time() > max_lifetime + LEEWAY:
        return False
    if issued is None:
        return True
    return (
        isinstance(issued, int | float) and not isinstance(issued, bool) and expires - issued <= max_lifetime
    )
