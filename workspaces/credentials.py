"""Credentials kept at rest: URLs with the secret taken out, the secret encrypted.

A repository URL such as ``https://user:token@host/org/repo.git`` is stored as
``https://***@host/org/repo.git``; the ``user:token`` part is encrypted with Fernet
(``cryptography``) under ``CREDENTIALS_KEYS``. The first key encrypts and every key
decrypts, so rotating is: prepend a new key, run ``rotate`` over the stored values, then
drop the old key. With no key set, one is derived from ``SECRET_KEY``.
"""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import SplitResult, urlsplit, urlunsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

REDACTED = "***"
# Schemes whose user part is a credential: a token is often sent as the user name.
SECRET_USER_SCHEMES = {"http", "https"}


def _fernet() -> MultiFernet:
    keys = list(settings.CREDENTIALS_KEYS)
    if not keys:
        digest = hashlib.sha256(f"credentials:{settings.SECRET_KEY}".encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(f"Setting CREDENTIALS_KEYS must list Fernet keys ({exc}).") from None


def encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def decrypt(token: str) -> str:
    """The secret; a token no key opens reads as empty (the credential must be entered again)."""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""


def rotate(token: str) -> str:
    """The same secret encrypted under the first key."""
    return _fernet().rotate(token.encode()).decode()


def split_url(url: str) -> tuple[str, str]:
    """``(url without its secret, the secret)``: the secret is ``user:password`` of an
    HTTP(S) URL, or the password of another scheme's (an SSH user name is no secret)."""
    parts = urlsplit(url)
    if not parts.scheme or parts.username is None or "@" not in parts.netloc:
        return url, ""
    userinfo, _, host = parts.netloc.rpartition("@")
    if parts.scheme in SECRET_USER_SCHEMES:
        if userinfo == REDACTED:
            return url, ""
        return _with_netloc(parts, f"{REDACTED}@{host}"), userinfo
    user, colon, password = userinfo.partition(":")
    if not colon or password == REDACTED:
        return url, ""
    return _with_netloc(parts, f"{user}:{REDACTED}@{host}"), password


def without_userinfo(url: str) -> str:
    """The URL git is given: a redacted user part removed (the secret travels in a header)."""
    parts = urlsplit(url)
    if parts.scheme not in SECRET_USER_SCHEMES or "@" not in parts.netloc:
        return url
    return _with_netloc(parts, parts.netloc.rpartition("@")[2])


def redact(text: str, *secrets: str) -> str:
    """``text`` with each secret (and its user:password halves) replaced."""
    for secret in secrets:
        for part in {secret, *secret.split(":", 1)}:
            if len(part) >= 4:
                text = text.replace(part, REDACTED)
    return text


def _with_netloc(parts: SplitResult, netloc: str) -> str:
    return urlunsplit(parts._replace(netloc=netloc))
