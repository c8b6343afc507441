"""What the live work trackers share (one module per provider: ``jira.py``, ``clickup.py``,
``monday.py``; ``selection.api_tracker`` picks one by the connection's kind): the
connection's token (decrypted only here, for the request's header) and its name in every
message.

Every tracker calls its provider through ``workspaces.providers.http`` (one convention for
every provider: timeouts; 429 or an exhausted rate limit reschedules the job without using
an attempt; 5xx retries; 401/403 fail at once naming the connection; malformed answers fail
clearly) and passes it the token, which no error message may repeat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workspaces import credentials
from workspaces.errors import ProviderNotConfigured

if TYPE_CHECKING:
    from workspaces.models import WorkConnection


def subject(connection: WorkConnection) -> str:
    """How every message names the connection: ``connection #3 "Payments" (Jira)``."""
    return f'connection #{connection.pk} "{connection.name}" ({connection.get_kind_display()})'


def token(connection: WorkConnection) -> str:
    """The connection's API token; a permanent failure when there is none to use."""
    secret = credentials.decrypt(connection.credential) if connection.credential else ""
    if not secret:
        reason = (
            "no API token"
            if not connection.credential
            else "an API token that no key of CREDENTIALS_KEYS decrypts"
        )
        raise ProviderNotConfigured(
            f"{subject(connection).capitalize()} has {reason}; enter it on the connection's admin page."
        )
    return secret


def required(connection: WorkConnection, value: str, what: str) -> str:
    if not value.strip():
        raise ProviderNotConfigured(f"{subject(connection).capitalize()} has no {what}.")
    return value.strip()
