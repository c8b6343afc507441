"""The SQLite driver: the embedded default (``make demo``, one host), on the ORM alone.

SQLite has no row locks, no SKIP LOCKED, no notices and no advisory locks. What makes the
portable verbs (``jobs.drivers.orm``) correct here is the IMMEDIATE transaction mode set
in the settings: every transaction takes the database's write lock at BEGIN, so claimers
serialise, and the claim's select-then-update pair cannot hand one job to two workers.
Workers poll; timer steps need no lock, since one host runs them.
"""

from __future__ import annotations

from jobs.drivers.orm import OrmDriver


class SQLiteDriver(OrmDriver):
    vendor = "sqlite"

    def is_conflict(self, error: BaseException) -> bool:
        # Another process held the write lock for longer than the busy timeout.
        return "database is locked" in str(error)
