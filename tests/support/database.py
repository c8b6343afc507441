"""The test database seen from outside Django's own connection: its URL for subprocesses,
and plain psycopg sessions (another worker, an operator's shell)."""

from __future__ import annotations

import psycopg
from django.conf import settings
from django.db import connection


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def raw_connection(autocommit: bool = True) -> psycopg.Connection:
    """A plain psycopg connection to the test database, outside Django's connection."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=autocommit)
