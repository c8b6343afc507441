"""``platform.W005``: PostgreSQL's autovacuum off for the engine's tables (for the whole
server, or for ``jobs_job`` by its storage parameter) is reported by ``manage.py check
--database default`` and ``migrate``, and in a starting worker's log: without it the
finished jobs' dead rows stay and the statistics the claims are planned by go stale.
MariaDB has no autovacuum to turn off: nothing to report."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from jobs import checks
from jobs.drivers import driver
from tests.support.database import on_mariadb
from tests.support.workers import wait_log, wait_registered

pytestmark = pytest.mark.django_db


def _server_autovacuum_on() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('autovacuum') = 'on' AND current_setting('track_counts') = 'on'"
        )
        return cursor.fetchone()[0]


def _table_autovacuum(enabled: bool) -> None:
    with connection.cursor() as cursor:
        if enabled:
            cursor.execute("ALTER TABLE jobs_job RESET (autovacuum_enabled)")
        else:
            cursor.execute("ALTER TABLE jobs_job SET (autovacuum_enabled = false)")


@pytest.mark.postgres_only("PostgreSQL's autovacuum")
def test_upkeep_check__names_what_turned_autovacuum_off_and_how_to_turn_it_on():
    server_on = _server_autovacuum_on()  # a server setting: read, not changed by a test
    assert [m.id for m in checks.check_autovacuum(databases=["default"])] == (
        [] if server_on else [checks.AUTOVACUUM_OFF]
    )
    _table_autovacuum(False)  # rolled back with the test's transaction
    (warning,) = checks.check_autovacuum(databases=["default"])
    out = StringIO()
    call_command("check", "--database", "default", stdout=out, stderr=out)
    assert warning.id == checks.AUTOVACUUM_OFF
    assert ("off for jobs_job" if server_on else "off for the whole server") in warning.msg
    assert "VACUUM ANALYZE jobs_job" in warning.hint
    assert checks.AUTOVACUUM_OFF in out.getvalue()


@pytest.mark.skipif(not on_mariadb(), reason="MariaDB, which has no autovacuum")
def test_upkeep_check__says_nothing_on_mariadb():
    assert driver().upkeep_off() is None
    assert checks.check_autovacuum(databases=["default"]) == []


def test_upkeep_check__says_nothing_where_no_database_is_named():
    assert checks.check_autovacuum(databases=None) == []


@pytest.mark.postgres_only("PostgreSQL's autovacuum")
@pytest.mark.django_db(transaction=True)
def test_upkeep_check__a_starting_worker_says_autovacuum_is_off_for_jobs_job(start_worker):
    server_on = _server_autovacuum_on()
    _table_autovacuum(False)
    try:
        worker = start_worker("--name", "upkeep")
        wait_registered("upkeep")
        wait_log(worker, "off for jobs_job" if server_on else "off for the whole server")
    finally:
        _table_autovacuum(True)
    assert "PostgreSQL: autovacuum is off" in worker.log() and "VACUUM ANALYZE jobs_job" in worker.log()
