"""Credentials kept at rest, encrypted, each bound to the origin it was given for.

A repository URL such as ``https://user:token@host/org/repo.git`` is stored as
``https://***@host/org/repo.git`` (``workspaces.addresses.take_credential``); the
``user:token`` part, like a work connection's API token, is encrypted with Fernet
(``cryptography``) under ``CREDENTIALS_KEYS`` together with the origin (scheme, host, port)
it is for (``seal``), and is handed out only for that origin (``unseal``). The first key
encrypts and every key decrypts, so rotating is: prepend a new key, run ``rotate`` over the
stored values, then drop the old key. With no key set, one is derived from ``SECRET_KEY``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

REDACTED = "***"
SEALED = "sealed:"  # what a secret bound to its origin starts with once decrypted


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
    return opened(token).secret


@dataclass(frozen=True)
class Opened:
    secret: str
    # The origin it was given for; "" for a secret stored before secrets were bound to one.
    origin: str = ""


def seal(secret: str, origin: str) -> str:
    """``secret`` encrypted together with the origin (``scheme://host:port``) it is for."""
    return encrypt(SEALED + json.dumps({"origin": origin, "secret": secret}))


def opened(token: str) -> Opened:
    try:
        plain = _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return Opened("")
    if not plain.startswith(SEALED):
        return Opened(plain)
    data = json.loads(plain.removeprefix(SEALED))
    return Opened(str(data["secret"]), str(data["origin"]))


def bound_origin(token: str) -> str:
    """The origin ``token`` was sealed for; "" when it names none (stored before binding) or
    cannot be read here (no key opens it, CREDENTIALS_KEYS malformed): saving a record must
    not fail on the key, using its credential does."""
    try:
        return opened(token).origin
    except ImproperlyConfigured:
        return ""


def unseal(token: str, origin: str) -> str:
    """The secret, if it was given for ``origin`` (or stored before secrets were bound to an
    origin); "" otherwise, as for a token no key opens."""
    found = opened(token)
    return found.secret if found.origin in ("", origin) else ""


def key_problem() -> str:
    """Why CREDENTIALS_KEYS cannot encrypt ("" when it can); the keys are never repeated."""
    try:
        _fernet()
    except ImproperlyConfigured as exc:
        return str(exc)
    return ""


def rotate(token: str) -> str:
    """The same secret encrypted under the first key."""
    return _fernet().rotate(token.encode()).decode()


def redact(text: str, *secrets: str) -> str:
    """``text`` with each secret (and its user:password halves) replaced."""
    for secret in secrets:
        for part in {secret, *secret.split(":", 1)}:
            if len(part) >= 4:
                text = text.replace(part, REDACTED)
    return text
