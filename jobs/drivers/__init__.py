"""One driver per database behind one protocol (``jobs.drivers.protocol.Driver``).

``driver()`` is the engine's way to its database: it picks the driver of the default
database's connection the first time it is asked and keeps it. This package (and the
migrations) is the only place of the engine that asks which database it is on.

    postgres  PostgreSQL: prepared statements, LISTEN/NOTIFY, advisory locks
    mariadb   MariaDB 10.6+ and MySQL 8: SKIP LOCKED, GET_LOCK, polling
    sqlite    the embedded default, on the ORM alone (``orm``: the verbs shared by all)

A driver module is imported only when its database is in use, so the engine on MariaDB
never imports psycopg.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from jobs.drivers.protocol import Driver

#: Django's vendor name → the driver's class, as "module:Class" below this package.
DRIVERS = {
    "postgresql": "postgres:PostgresDriver",
    "mysql": "mariadb:MariaDBDriver",
    "sqlite": "sqlite:SQLiteDriver",
}

_chosen: dict[str, Driver] = {}


def driver(alias: str = DEFAULT_DB_ALIAS) -> Driver:
    """The driver of the database ``alias`` (the engine's tables live in the default one)."""
    try:
        return _chosen[alias]
    except KeyError:
        pass
    found = _chosen[alias] = driver_class(connections[alias].vendor)(alias)
    return found


def for_connection(connection: BaseDatabaseWrapper) -> Driver:
    """The driver for ``connection``, one of an alias's or of its own (Django's test setup
    connects to no database under an alias of no database's)."""
    chosen = _chosen.get(connection.alias)
    if chosen is not None and chosen.vendor == connection.vendor:
        return chosen
    return driver_class(connection.vendor)(connection.alias)


def driver_class(vendor: str) -> Callable[[str], Driver]:
    """The driver class for Django's ``vendor``; the portable ORM driver for a database
    without one of its own."""
    module, _, name = DRIVERS.get(vendor, "orm:OrmDriver").partition(":")
    found: Callable[[str], Driver] = getattr(import_module(f"{__name__}.{module}"), name)
    return found


__all__ = ["Driver", "driver", "driver_class", "for_connection"]
