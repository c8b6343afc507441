"""Setting up this project's Django for a benchmark run from the project root."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def setup(database: str, settings: str = "config.settings_test") -> None:
    """Django with ``settings`` on DATABASE_URL, by default the benchmark's own ``database``
    on the local server (its tables are wiped: never point it at data you keep)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", settings)
    os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{database}")
    import django

    django.setup()


def open_database(url: str | None, default: str) -> bool:
    """Set Django up on ``url`` (``--database``; postgres:// or mysql:// for MariaDB),
    else on DATABASE_URL, else on the local PostgreSQL's ``default`` database, creating the
    database when missing. Returns whether it is MariaDB."""
    from urllib.parse import urlsplit

    from bench.lib.mariadb import ensure_mariadb_database
    from bench.lib.postgres import ensure_database

    if url:
        os.environ["DATABASE_URL"] = url
    given = os.environ.get("DATABASE_URL", "")
    mariadb = given.startswith("mysql")
    if mariadb:
        ensure_mariadb_database(given)
    else:
        ensure_database(urlsplit(given).path.lstrip("/") if given else default)
    setup(default)
    return mariadb


def retrying[T](func: Callable[..., T], *args: object, **kwargs: object) -> T:
    """Call ``func``, reconnecting while PostgreSQL restarts (a shared server may)."""
    from django.db import InterfaceError, OperationalError, connection

    for delay in (0.5, 1, 2, 4, 8, 16, 30):
        try:
            return func(*args, **kwargs)
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(delay)
    return func(*args, **kwargs)
