"""``platform.W004``: a database session that compares text in another collation than the
engine's tables hold it in (MariaDB; a project's ``collation`` option other than the
database's) is reported by ``manage.py check --database default`` and ``migrate``, naming
both collations and the option to set. PostgreSQL has no such setting: nothing to report."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from jobs import checks
from tests.support.database import on_mariadb, other_collation

pytestmark = pytest.mark.django_db


def test_collation_check__says_nothing_when_the_session_and_the_tables_agree():
    assert checks.check_collation(databases=["default"]) == []


@pytest.mark.skipif(not on_mariadb(), reason="a MariaDB session's collation")
def test_collation_check__names_both_collations_and_the_option_when_they_differ():
    with other_collation() as (own, other):
        (warning,) = checks.check_collation(databases=["default"])
        out = StringIO()
        call_command("check", "--database", "default", stdout=out, stderr=out)
    assert warning.id == checks.COLLATION_MISMATCH
    assert f"compare text in {other}" in warning.msg and f"hold it in {own}" in warning.msg
    assert "DATABASES['default']['OPTIONS']" in warning.hint and own in warning.hint
    assert checks.COLLATION_MISMATCH in out.getvalue()


def test_collation_check__says_nothing_where_no_database_is_named():
    assert checks.check_collation(databases=None) == []
