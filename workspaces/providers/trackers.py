"""What the live work trackers share (one module per provider: ``jira.py``, ``clickup.py``,
``monday.py``; ``selection.api_tracker`` picks one by the connection's kind): the
connection's token (decrypted only here, for the request's header) and its name in every
message.

Every tracker calls its provider through ``workspaces.providers.http`` (one convention for
every provider: timeouts; 429 or an exhausted rate limit reschedules the job without using
an attempt; 5xx retries; 401/403 fail at once naming the connection; malformed answers fail
clearly) and passes it the token, which no error message may repeat.

Before any call, the connection's API address is checked (``workspaces.addresses``: HTTPS,
the provider's own hosts or ``PROVIDER_ALLOWED_HOSTS``, public addresses only unless
``PROVIDER_ALLOWED_NETWORKS``), and the token is handed out only for the address it was
entered for. Identifiers that go into a URL path are checked against the provider's format.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workspaces import addresses, credentials
from workspaces.errors import ProviderNotConfigured, ProviderUnavailable

if TYPE_CHECKING:
    from workspaces.models import WorkConnection


# What each provider's identifier of a connection looks like: it goes into a URL path
# (ClickUp) or a query, so nothing else is sent ("../../team" once reached another path).
EXTERNAL_IDS = {
    "jira": (re.compile(r"^[A-Z][A-Z0-9_]{0,254}$"), "Jira project key (PAY, OPS_2)"),
    "clickup": (re.compile(r"^[0-9]{1,30}$"), "ClickUp list id (a number)"),
    "monday": (re.compile(r"^[0-9]{1,30}$"), "Monday board id (a number)"),
}


def external_id_problem(kind: str, value: str) -> str:
    """Why ``value`` is not a valid identifier for a connection of ``kind`` ("" when it is)."""
    pattern, what = EXTERNAL_IDS.get(kind, (None, ""))
    if pattern is None or pattern.match(value.strip()):
        return ""
    return f"Not a valid {what}."


def external_id(connection: WorkConnection) -> str:
    """The connection's identifier at its provider, checked against the provider's format."""
    value = connection.external_id.strip()
    _, what = EXTERNAL_IDS[connection.kind]
    if not value or external_id_problem(connection.kind, value):
        raise ProviderNotConfigured(f"{subject(connection).capitalize()} has no valid {what}.")
    return value


def subject(connection: WorkConnection) -> str:
    """How every message names the connection: ``connection #3 "Payments" (Jira)``."""
    return f'connection #{connection.pk} "{connection.name}" ({connection.get_kind_display()})'


def api_address(connection: WorkConnection) -> addresses.ApiAddress:
    """The connection's API address (its provider's public API when it has none), checked
    and resolved: a permanent failure for an address the rules refuse."""
    url = connection.api_url.strip() or addresses.DEFAULT_API_URLS.get(connection.kind, "")
    if not url:
        raise ProviderNotConfigured(f"{subject(connection).capitalize()} has no API address.")
    try:
        address = addresses.api_address(connection.kind, url)
        addresses.check_resolved(address)
    except addresses.AddressRefused as exc:
        raise ProviderNotConfigured(f"{subject(connection).capitalize()}: {exc}") from None
    except OSError:
        raise ProviderUnavailable(
            f"The API address of {subject(connection)} does not resolve ({address.host})."
        ) from None
    return address


def token(connection: WorkConnection, address: addresses.ApiAddress | None = None) -> str:
    """The connection's API token, for ``address`` only; a permanent failure when there is
    none to use there."""
    found = credentials.opened(connection.credential) if connection.credential else credentials.Opened("")
    if found.secret and address is not None and found.origin and found.origin != address.origin:
        raise ProviderNotConfigured(
            f"The API token of {subject(connection)} was entered for another API address than "
            f"{address.origin}; enter it again on the connection's admin page."
        )
    secret = found.secret
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
