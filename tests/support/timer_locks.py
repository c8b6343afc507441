"""A timer step's lock as another session takes it: PostgreSQL's advisory lock on the
step's key, MariaDB's named lock (GET_LOCK) named after this database and the step, as
``jobs.timers`` takes them (without waiting), held until released."""

from __future__ import annotations

import zlib
from typing import Any

from jobs.drivers import mariadb
from tests.support.database import on_mariadb


def advisory_key(step_name: str) -> int:
    return zlib.crc32(f"jobs.timer:{step_name}".encode())


def take_step_lock(session: Any, step_name: str) -> bool:
    if on_mariadb():
        return (
            session.execute(mariadb.TRY_LOCK_TIMER_STEP, [zlib.crc32(step_name.encode())]).fetchone()[0] == 1
        )
    return session.execute("SELECT pg_try_advisory_lock(%s)", [advisory_key(step_name)]).fetchone()[0] is True


def release_step_lock(session: Any, step_name: str) -> None:
    if on_mariadb():
        session.execute(mariadb.UNLOCK_TIMER_STEP, [zlib.crc32(step_name.encode())])
    else:
        session.execute("SELECT pg_advisory_unlock(%s)", [advisory_key(step_name)])
