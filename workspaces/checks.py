"""``manage.py check --deploy``: the key that encrypts stored credentials.

Unset, ``CREDENTIALS_KEYS`` falls back to a key derived from ``SECRET_KEY`` (rotating that
one would make every stored credential unreadable); malformed, saving a token fails. No
message repeats a key.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register


@register(Tags.security, deploy=True)
def credentials_keys(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    if not settings.CREDENTIALS_KEYS:
        return [
            Warning(
                "CREDENTIALS_KEYS is not set: stored credentials are encrypted with a key derived "
                "from SECRET_KEY.",
                hint="Set CREDENTIALS_KEYS to a Fernet key of its own (python -c 'from "
                "cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'), then run "
                "manage.py rotate_credentials.",
                id="workspaces.W001",
            )
        ]
    from workspaces import credentials  # its cryptography only when checking: not a worker's start

    problem = credentials.key_problem()
    if problem:
        return [
            Error(
                f"{problem} Saving a credential would fail.",
                hint="Each key is 32 url-safe base64-encoded bytes, as Fernet.generate_key() makes; "
                "the keys are not shown here.",
                id="workspaces.E001",
            )
        ]
    return []
