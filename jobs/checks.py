"""The engine's system checks, every id under ``platform.``.

The settings (every command runs these, ``runworker`` only these: ``WORKER_TAG``): a value that is not of its kind or out of range
(``platform.E001``), the supervisor's asynchronous commit behind a transaction pooler
(``platform.E002``), a LISTEN database that is not PostgreSQL (``platform.E003``), and a
setting still under its old, unprefixed name (``platform.W003``).

The jobs: queues with due jobs that no live worker serves (``platform.W001``), timers
that missed their runs (``platform.W002``), a session collation other than the engine's
tables' (``platform.W004``, MariaDB), and PostgreSQL's autovacuum off for them
(``platform.W005``; ``runworker`` also says so when it starts). Tagged ``database``, so Django runs them only
where a database is named: ``manage.py check --database default``, ``migrate`` (before it
migrates), the test runner. They say nothing when the database cannot be reached or the
engine's tables are not there yet (a fresh database during ``migrate``): other checks and
the command itself report those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from jobs import conf, coverage
from jobs.conf import jobs_settings
from jobs.drivers import driver
from jobs.timetable import health

UNSERVED_QUEUE = "platform.W001"
OVERDUE_TIMER = "platform.W002"
RENAMED_SETTING = "platform.W003"
COLLATION_MISMATCH = "platform.W004"
AUTOVACUUM_OFF = "platform.W005"
BAD_SETTING = "platform.E001"
ASYNC_COMMIT_BEHIND_POOLER = "platform.E002"
LISTEN_NOT_POSTGRESQL = "platform.E003"
TABLES = {"jobs_job", "jobs_worker", "jobs_timer", "jobs_queue"}
#: The tag of the checks ``runworker`` runs before it starts (the settings'): the project's
#: other checks (models, admin, URLs) are ``manage.py check``'s and the deployment's, and
#: cost a worker tens of milliseconds at every start.
WORKER_TAG = "platform_worker"


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


@register(Tags.database)
def check_collation(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [
        CheckWarning(
            f"The database sessions compare text in {session}; the engine's tables hold it in {tables}.",
            hint=(
                f"Set the collation option of DATABASES['{DEFAULT_DB_ALIAS}']['OPTIONS'] to {tables}, the "
                "tables' (or convert the tables): a statement's text in another collation than its "
                "column's fails (\"Illegal mix of collations\") or cannot use the column's index."
            ),
            obj="database",
            id=COLLATION_MISMATCH,
        )
        for session, tables in _read(databases, _collation_mismatches)
    ]


def _collation_mismatches() -> list[tuple[str, str]]:
    found = driver().session_mismatch()
    return [found] if found else []


#: What the autovacuum warning says, here and in a starting worker's log.
UPKEEP_HINT = (
    "Turn it on for jobs_job (or run VACUUM ANALYZE jobs_job every few minutes): without "
    "vacuum the finished jobs' dead rows stay in the table and its indexes; without fresh "
    "statistics PostgreSQL may plan a claim as a scan of the whole table."
)


@register(Tags.database)
def check_autovacuum(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [
        CheckWarning(f"PostgreSQL: {gap}.", hint=UPKEEP_HINT, obj="database", id=AUTOVACUUM_OFF)
        for gap in _read(databases, _upkeep_gaps)
    ]


def _upkeep_gaps() -> list[str]:
    found = driver().upkeep_off()
    return [found] if found else []


@register(WORKER_TAG)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for setting in conf.declared():
        if setting.given_under_old_name():
            messages.append(
                CheckWarning(
                    f"Setting {setting.old_name} is deprecated: the engine reads it as {setting.name}.",
                    hint=f"Rename it {setting.name} in your settings.",
                    id=RENAMED_SETTING,
                )
            )
        problem = setting.problem()
        if problem is not None:
            messages.append(Error(f"Setting {setting.name} {problem}.", id=BAD_SETTING))
    if any(message.is_serious() for message in messages):
        return messages  # the rules below read values that may not be of their kind
    if jobs_settings.WORKER_ASYNC_COMMIT and jobs_settings.DATABASE_POOL_MODE == "transaction":
        messages.append(
            Error(
                "Setting JOBS_WORKER_ASYNC_COMMIT must be false with JOBS_DATABASE_POOL_MODE=transaction: "
                "its session setting would leak to the pooler's other clients.",
                id=ASYNC_COMMIT_BEHIND_POOLER,
            )
        )
    listen = jobs_settings.LISTEN_DATABASE
    if listen is not None and not str(listen.get("ENGINE", "")).endswith("postgresql"):
        messages.append(
            Error(
                "Setting JOBS_LISTEN_DATABASE must be a PostgreSQL database (its ENGINE "
                "django.db.backends.postgresql): LISTEN is PostgreSQL's.",
                id=LISTEN_NOT_POSTGRESQL,
            )
        )
    return messages
