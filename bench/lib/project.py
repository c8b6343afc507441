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
