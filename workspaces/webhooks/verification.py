"""Is this delivery from the provider? Each check runs on the raw body, before anything
parses it, and compares in constant time.

Every function takes a list of secrets, the current one first and any being retired after
it (the settings are comma-separated lists), and tries each of them without stopping at the
first match, so the time taken does not say which one matched.
"""

from __future__ import annotations

import hashlib
import hmac
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


def jwt_matches(authorization: str, secrets: Sequence[str], *, audience: str) -> bool:
    """``authorization`` (``Bearer <jwt>`` or the bare token) is an HS256 JWT signed with one
    of ``secrets``, not expired, and addressed to ``audience`` (monday.com puts the URL it
    posts to in ``aud``)."""
    token = authorization.strip().removeprefix("Bearer ").strip()
    if not token or not secrets:
        return False
    matched = False
    for secret in secrets:
        try:
            jwt.decode(
                token,
                secret,
                algorithms=["HS256"],  # never "none", never whatever the token's header asks for
                audience=audience,
                options={"require": ["exp", "aud"]},
                leeway=30,
            )
        except jwt.InvalidTokenError:
            continue
        matched = True
    return matched
