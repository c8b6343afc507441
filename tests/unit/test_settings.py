"""Settings read from the environment: a malformed one stops start-up with a message that
names it. The readers are checked in-process; start-up itself through ``manage.py check``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "reader, raw, message",
    [
        (
            lambda: env.number("JOBS_TEST_SETTING", 1.0),
            "fast",
            "Setting JOBS_TEST_SETTING must be a number, got 'fast'",
        ),
        (
            lambda: env.number("JOBS_TEST_SETTING", 1.0, minimum=0.01),
            "0",
            "Setting JOBS_TEST_SETTING must be at least 0.01",
        ),
        (
            lambda: env.integer("JOBS_TEST_SETTING", 1),
            "2.5",
            "Setting JOBS_TEST_SETTING must be a whole number",
        ),
        (
            lambda: env.integer("JOBS_TEST_SETTING", 1, minimum=1),
            "0",
            "Setting JOBS_TEST_SETTING must be at least 1",
        ),
        (
            lambda: env.flag("JOBS_TEST_SETTING", False),
            "maybe",
            "Setting JOBS_TEST_SETTING must be true or false",
        ),
        (
            lambda: env.choice("JOBS_TEST_SETTING", "a", ["a", "b"]),
            "c",
            "Setting JOBS_TEST_SETTING must be one of a, b",
        ),
        (
            lambda: env.database("JOBS_TEST_SETTING", "sqlite://"),
            "nosuch://x",
            "Setting JOBS_TEST_SETTING names an unknown database scheme",
        ),
        (
            lambda: env.database("JOBS_TEST_SETTING", "sqlite://"),
            "postgres://u@h:port/db",
            "Setting JOBS_TEST_SETTING is not a database URL",
        ),
    ],
    ids=["number", "number-minimum", "integer", "integer-minimum", "flag", "choice", "db-scheme", "db-port"],
)
def test_env__malformed_value_raises_improperly_configured_naming_it(monkeypatch, reader, raw, message):
    monkeypatch.setenv("JOBS_TEST_SETTING", raw)
    with pytest.raises(ImproperlyConfigured, match=message):
        reader()


def test_env__unset_values_take_their_defaults(monkeypatch):
    monkeypatch.delenv("JOBS_TEST_SETTING", raising=False)
    assert env.number("JOBS_TEST_SETTING", 1.5) == 1.5
    assert env.integer("JOBS_TEST_SETTING", 7) == 7
    assert env.flag("JOBS_TEST_SETTING", True) is True
    assert env.words("JOBS_TEST_SETTING", "a,b") == ["a", "b"]


def test_env__well_formed_values_are_parsed(monkeypatch):
    monkeypatch.setenv("JOBS_TEST_SETTING", "0.25")
    assert env.number("JOBS_TEST_SETTING", 1.0) == 0.25
    monkeypatch.setenv("JOBS_TEST_SETTING", "off")
    assert env.flag("JOBS_TEST_SETTING", True) is False
    config = env.database("JOBS_TEST_SETTING_DB", "postgres://u@db.example:5433/name")
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.example", 5433, "name")


def _manage_check(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JOBS_", "DATABASE_URL", "DJANGO_"))
    }
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path), **variables)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow  # starts manage.py
@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("JOBS_POLL_INTERVAL", "soon", "Setting JOBS_POLL_INTERVAL must be a number, got 'soon'"),
        ("JOBS_ACK_BATCH", "0", "Setting JOBS_ACK_BATCH must be at least 1, got 0"),
        ("DATABASE_URL", "nosuchdb://nowhere", "Setting DATABASE_URL"),
        ("DATABASE_POOL_MODE", "statement", "Setting DATABASE_POOL_MODE must be one of session, transaction"),
        (
            "JOBS_LISTEN_DATABASE_URL",
            "sqlite:///x",
            "Setting JOBS_LISTEN_DATABASE_URL must be a PostgreSQL URL",
        ),
    ],
)
def test_start_up__stops_with_a_message_naming_the_malformed_setting(tmp_path, variable, value, message):
    result = _manage_check(tmp_path, **{variable: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


@pytest.mark.slow  # starts manage.py
def test_start_up__passes_with_the_embedded_defaults(tmp_path):
    result = _manage_check(tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow  # starts manage.py
def test_start_up__refuses_the_supervisor_session_setting_behind_a_transaction_pooler(tmp_path):
    result = _manage_check(tmp_path, DATABASE_POOL_MODE="transaction", JOBS_WORKER_ASYNC_COMMIT="true")
    assert result.returncode != 0
    assert "JOBS_WORKER_ASYNC_COMMIT must be false with DATABASE_POOL_MODE=transaction" in result.stderr


@pytest.mark.slow  # starts manage.py
def test_start_up__a_transaction_pooler_turns_off_session_state_by_default(tmp_path):
    script = (
        "from django.conf import settings as s; "
        "print(s.JOBS_PREPARED_STATEMENTS, s.JOBS_WORKER_ASYNC_COMMIT, "
        "s.DATABASES['default'].get('DISABLE_SERVER_SIDE_CURSORS'))"
    )
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("JOBS_", "DJANGO_"))
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        VAR_DIR=str(tmp_path),
        DATABASE_URL="postgres://u@127.0.0.1:6432/db",
        DATABASE_POOL_MODE="transaction",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == ["False", "False", "True"], result.stderr
