"""The engine's system check: queues with due jobs that no live worker serves.

Tagged ``database``, so Django runs it only where a database is named: ``manage.py check
--database default``, ``migrate`` (before it migrates), the test runner. It says nothing when
the database cannot be reached or the engine's tables are not there yet (a fresh database
during ``migrate``): other checks and the command itself report those.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, register
from django.core.checks import Warning as CheckWarning
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from jobs import coverage

UNSERVED_QUEUE = "platform.W001"
TABLES = {"jobs_job", "jobs_worker"}


@register(Tags.database)
def check_queues_are_served(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    if not databases or DEFAULT_DB_ALIAS not in databases:
        return []  # the engine's tables live in the default database
    try:
        if not TABLES.issubset(connections[DEFAULT_DB_ALIAS].introspection.table_names()):
            return []  # not migrated yet
        states = coverage.queue_states()
    except DatabaseError:
        return []  # unreachable: the command that needs it says so
    return [
        CheckWarning(state.warning, hint=state.hint, obj=f"queue {state.queue}", id=UNSERVED_QUEUE)
        for state in coverage.unserved(states)
    ]
