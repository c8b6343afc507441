"""The engine's system checks: queues with due jobs that no live worker serves
(``platform.W001``), and timers that missed their runs (``platform.W002``).

Tagged ``database``, so Django runs it only where a database is named: ``manage.py check
--database default``, ``migrate`` (before it migrates), the test runner. It says nothing when
the database cannot be reached or the engine's tables are not there yet (a fresh database
during ``migrate``): other checks and the command itself report those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.checks import CheckMessage, Tags, register
from django.core.checks import Warning as CheckWarning
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from jobs import coverage
from jobs.timetable import health

UNSERVED_QUEUE = "platform.W001"
OVERDUE_TIMER = "platform.W002"
TABLES = {"jobs_job", "jobs_worker", "jobs_timer"}


def _read[T](databases: Any, measure: Callable[[], list[T]]) -> list[T]:
    """What ``measure`` finds in the engine's tables; nothing where no database is named
    (the tables live in the default one), before they are migrated, or when unreachable
    (the command that needs the database says so)."""
    if not databases or DEFAULT_DB_ALIAS not in databases:
        return []
    try:
        if not TABLES.issubset(connections[DEFAULT_DB_ALIAS].introspection.table_names()):
            return []
        return measure()
    except DatabaseError:
        return []


@register(Tags.database)
def check_queues_are_served(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    return [
        CheckWarning(state.warning, hint=state.hint, obj=f"queue {state.queue}", id=UNSERVED_QUEUE)
        for state in coverage.unserved(_read(databases, coverage.queue_states))
    ]


@register(Tags.database)
def check_timers_run(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [
        CheckWarning(state.warning, hint=state.hint, obj=f"timer {state.name}", id=OVERDUE_TIMER)
        for state in health.overdue(_read(databases, health.timer_states))
    ]
