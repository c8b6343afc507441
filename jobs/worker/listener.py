"""The LISTEN side of instant wake-up: a dedicated connection on the channel the enqueue
trigger notifies, where the driver ``listens`` (PostgreSQL). Not used on other databases
(workers poll there).

LISTEN belongs to a session, so behind a pooler in transaction mode
(``JOBS_DATABASE_POOL_MODE=transaction``) the notices would go to whichever client holds that
server session next, or nowhere. There the listener connects to
``JOBS_LISTEN_DATABASE_URL``, straight to PostgreSQL; with that unset it stays off and the
worker polls every ``JOBS_POLL_INTERVAL``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from jobs.conf import jobs_settings
from jobs.drivers import driver
from jobs.drivers.protocol import Subscription

logger = logging.getLogger("jobs.worker")


def behind_transaction_pooler() -> bool:
    return jobs_settings.DATABASE_POOL_MODE == "transaction"


class Listener:
    def __init__(self) -> None:
        self._wrapper: BaseDatabaseWrapper | None = None
        self._notices: Subscription | None = None

    @property
    def enabled(self) -> bool:
        if not driver().listens:
            return False
        return jobs_settings.LISTEN_DATABASE is not None or not behind_transaction_pooler()

    def describe(self) -> str:
        """How this worker wakes up, for its start-up line."""
        if self.enabled:
            return "wakes on NOTIFY" + (" (direct connection)" if jobs_settings.LISTEN_DATABASE else "")
        if driver().listens:
            return "polls: LISTEN needs a session, set JOBS_LISTEN_DATABASE_URL to wake at once"
        return "polls"

    def connect(self) -> None:
        self.close()
        wrapper = _new_wrapper()
        self._wrapper = wrapper
        self._notices = driver().listen(wrapper)

    @property
    def connected(self) -> bool:
        return self._notices is not None and not self._notices.closed

    def fileno(self) -> int:
        assert self._notices is not None
        return self._notices.fileno()

    def drain(self) -> set[str]:
        """Queues named in the notifications received so far (never blocks)."""
        assert self._notices is not None
        return self._notices.drain()

    def close(self) -> None:
        if self._wrapper is not None:
            try:
                self._wrapper.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may raise
                logger.debug("Listener connection closed uncleanly.", exc_info=True)
        self._wrapper = None
        self._notices = None


def _new_wrapper() -> BaseDatabaseWrapper:
    """A connection of its own: to JOBS_LISTEN_DATABASE_URL when set, else like the default
    database's. Django's own errors wrap it, so an outage looks the same as on the main one."""
    default = connections[DEFAULT_DB_ALIAS]
    direct = jobs_settings.LISTEN_DATABASE
    if direct is None:
        return connections.create_connection(DEFAULT_DB_ALIAS)
    settings_dict: dict[str, Any] = {
        **default.settings_dict,
        **{key: direct[key] for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT") if key in direct},
        "OPTIONS": {**default.settings_dict.get("OPTIONS", {}), **direct.get("OPTIONS", {})},
    }
    # Under the default alias, as create_connection names it: connection_created receivers
    # (django.contrib.postgres's) look their connection up by alias.
    return type(default)(settings_dict, DEFAULT_DB_ALIAS)
