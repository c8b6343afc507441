"""MariaDB's sessions as the engine needs them, whatever the server's own settings."""

from __future__ import annotations

import copy

import pytest
from django.db import connection, connections

from tests.support.database import on_mariadb

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not on_mariadb(), reason="MariaDB's session settings"),
]


def test_session__speaks_utc_even_when_the_server_does_not():
    # A server (or a project's init_command) five hours east of UTC: Django would store
    # UTC in the columns while CURRENT_TIMESTAMP, which the claim compares them with, ran
    # five hours ahead, so a job due in four hours would run now.
    settings_dict = copy.deepcopy(connection.settings_dict)
    settings_dict["OPTIONS"]["init_command"] = "SET time_zone = '+05:00'"
    session = type(connections["default"])(settings_dict)
    try:
        with session.cursor() as cursor:
            cursor.execute("SELECT @@session.time_zone, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())")
            assert cursor.fetchone() == ("+00:00", 0)
    finally:
        session.close()


def test_session__reads_committed_rows_in_utf8mb4():
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@session.tx_isolation, @@character_set_connection")
        assert cursor.fetchone() == ("READ-COMMITTED", "utf8mb4")
