"""The LISTEN side of instant wake-up: a dedicated PostgreSQL connection on the channel the
enqueue trigger notifies. Not used on other databases (workers poll there)."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from jobs import sql

logger = logging.getLogger("jobs.worker")


class Listener:
    def __init__(self) -> None:
        self._wrapper: BaseDatabaseWrapper | None = None
        self._raw: psycopg.Connection[Any] | None = None  # kept: the wrapper forgets it on close

    @property
    def enabled(self) -> bool:
        return connections["default"].vendor == "postgresql"

    def connect(self) -> None:
        self.close()
        wrapper = connections.create_connection("default")
        wrapper.ensure_connection()
        wrapper.connection.autocommit = True
        wrapper.connection.execute(sql.LISTEN)
        self._wrapper, self._raw = wrapper, wrapper.connection

    @property
    def connected(self) -> bool:
        return self._raw is not None and not self._raw.closed

    def fileno(self) -> int:
        assert self._raw is not None
        return self._raw.fileno()

    def drain(self) -> set[str]:
        """Queues named in the notifications received so far (never blocks)."""
        assert self._raw is not None
        return {notice.payload for notice in self._raw.notifies(timeout=0)}

    def close(self) -> None:
        if self._wrapper is not None:
            try:
                self._wrapper.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may raise
                logger.debug("Listener connection closed uncleanly.", exc_info=True)
        self._wrapper = self._raw = None
