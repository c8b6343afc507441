"""The driver seam, read from the source: only the drivers (and the migrations) ask which
database the engine runs on, and only the PostgreSQL driver knows psycopg."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "jobs"
# Asking which database this is, in any of the ways the engine used to.
VENDOR_CHECK = re.compile(r"\.vendor\b|_on_postgres|_on_mariadb|vendor\s*[!=]=|mysql_is_mariadb")
PSYCOPG = re.compile(r"^\s*(import psycopg|from psycopg)", re.MULTILINE)


def _engine_sources() -> list[Path]:
    return sorted(
        path
        for path in ENGINE.rglob("*.py")
        if not {"drivers", "migrations"} & set(path.relative_to(ENGINE).parts)
    )


def _offending_lines(pattern: re.Pattern[str], paths: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]


def test_no_engine_module_outside_the_drivers_asks_which_database_it_is_on():
    assert _offending_lines(VENDOR_CHECK, _engine_sources()) == []


def test_the_seam_check_finds_a_vendor_check(tmp_path):
    """The pattern above catches the forms the engine used (so the test cannot pass by
    matching nothing)."""
    asked = tmp_path / "asks.py"
    asked.write_text(
        'if connection.vendor == "postgresql":\n    pass\n'
        "if _on_mariadb():\n    pass\n"
        'if vendor != "mysql":\n    pass\n'
    )
    assert len(_offending_lines(VENDOR_CHECK, [asked])) == 3


def test_only_the_postgresql_driver_imports_psycopg():
    sources = sorted(path for path in ENGINE.rglob("*.py") if path != ENGINE / "drivers" / "postgres.py")
    assert _offending_lines(PSYCOPG, sources) == []


def test_the_engine_has_one_module_of_sql_per_database():
    drivers = {path.stem for path in (ENGINE / "drivers").glob("*.py")}
    assert {"protocol", "postgres", "mariadb", "sqlite"} <= drivers
    assert not (ENGINE / "sql.py").exists()


# Imports the engine on MariaDB's settings with psycopg made unimportable, and says which
# driver it chose, whether the listener would listen, and which psycopg modules it loaded.
_IMPORT_ON_MARIADB = textwrap.dedent(
    """
    import sys

    class NoPsycopg:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"psycopg", "psycopg2", "psycopg_c", "psycopg_binary"}:
                raise ImportError(f"{name} is not importable here")

    sys.meta_path.insert(0, NoPsycopg())

    import django
    from django.conf import settings

    settings.configure(
        DATABASES={"default": {"ENGINE": "django.db.backends.mysql", "NAME": "unused", "PORT": "1"}},
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "jobs"],
        USE_TZ=True,
    )
    django.setup()

    import jobs.metrics, jobs.queries, jobs.store, jobs.timers
    import jobs.worker.guard, jobs.worker.listener, jobs.worker.supervisor
    from jobs.drivers import driver

    print(type(driver()).__name__, jobs.worker.listener.Listener().enabled)
    print(sorted(name for name in sys.modules if name.startswith("psycopg")))
    try:
        import psycopg
    except ImportError:
        print("psycopg blocked")
    """
)


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("MySQLdb") is None, reason="needs mysqlclient (requirements-mariadb.txt)"
)
def test_the_engine_imports_on_mariadb_without_psycopg():
    """Nothing connects: choosing the driver needs only the settings."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ON_MARIADB],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["MariaDBDriver False", "[]", "psycopg blocked"]
