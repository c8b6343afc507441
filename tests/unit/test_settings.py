"""Settings read from the environment: a malformed one stops start-up with a message that
names it. The readers are checked in-process; start-up itself through ``manage.py check``."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

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


# --- no secret in an error ---------------------------------------------------------------


@pytest.mark.parametrize(
    "reader",
    [
        lambda: env.number("JOBS_TEST_TOKEN", 1.0),
        lambda: env.integer("JOBS_TEST_API_KEY", 1),
        lambda: env.flag("JOBS_TEST_PASSWORD", False),
        lambda: env.choice("JOBS_TEST_SECRET", "a", ["a", "b"]),
        lambda: env.origins("JOBS_TEST_PRIVATE_ORIGINS"),
        lambda: env.proxy_ssl_header("JOBS_TEST_PROXY_KEY"),
    ],
    ids=["number", "integer", "flag", "choice", "origins", "proxy-header"],
)
def test_env__a_malformed_secret_is_named_but_never_shown(monkeypatch, reader):
    monkeypatch.setenv("JOBS_TEST_TOKEN", "hunter2-s3cr3t")
    monkeypatch.setenv("JOBS_TEST_API_KEY", "hunter2-s3cr3t")
    monkeypatch.setenv("JOBS_TEST_PASSWORD", "hunter2-s3cr3t")
    monkeypatch.setenv("JOBS_TEST_SECRET", "hunter2-s3cr3t")
    monkeypatch.setenv("JOBS_TEST_PRIVATE_ORIGINS", "hunter2-s3cr3t")
    monkeypatch.setenv("JOBS_TEST_PROXY_KEY", "hunter2-s3cr3t")
    with pytest.raises(ImproperlyConfigured, match="Setting JOBS_TEST_") as raised:
        reader()
    assert "hunter2" not in str(raised.value) and "s3cr3t" not in str(raised.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgres://platform:s3cr3t-pw@db.internal:port/platform",
        "postgres://platform:s3cr3t@pw@db.internal:port/platform",
        "nosuchdb://platform:s3cr3t-pw@db.internal/platform",
    ],
    ids=["bad-port", "at-sign-in-password", "unknown-scheme"],
)
def test_env__a_malformed_database_url_is_shown_without_its_password(monkeypatch, url):
    monkeypatch.setenv("JOBS_TEST_DATABASE", url)
    with pytest.raises(ImproperlyConfigured, match="Setting JOBS_TEST_DATABASE") as raised:
        env.database("JOBS_TEST_DATABASE", "sqlite://")
    message = str(raised.value)
    assert "s3cr3t" not in message
    assert "platform:***@" in message  # what is wrong stays readable


def test_env__a_url_in_an_ordinary_setting_loses_its_password_too(monkeypatch):
    monkeypatch.setenv("JOBS_TEST_BROKER", "redis://user:s3cr3t@cache:6379/0")
    with pytest.raises(ImproperlyConfigured) as raised:
        env.choice("JOBS_TEST_BROKER", "off", ["off"])
    assert "s3cr3t" not in str(raised.value) and "redis://user:***@cache:6379/0" in str(raised.value)


# --- production defaults -----------------------------------------------------------------

PRODUCTION_KEY = "a-production-key-" + "x" * 50


def _settings(monkeypatch: pytest.MonkeyPatch, **variables: str) -> dict[str, object]:
    """config/settings.py read afresh under ``variables`` (and nothing else of ours)."""
    for name in list(os.environ):
        if name.startswith(("SECURE_", "SESSION_", "CSRF_", "JOBS_")) or name in ("DEBUG", "SECRET_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/unused")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "config" / "settings.py"))


def test_secret_key__start_up_refuses_without_one_when_debug_is_off(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="Setting SECRET_KEY is required when DEBUG is off"):
        _settings(monkeypatch)
    with pytest.raises(ImproperlyConfigured, match="Setting SECRET_KEY is required"):
        _settings(monkeypatch, SECRET_KEY="")
    assert _settings(monkeypatch, SECRET_KEY=PRODUCTION_KEY)["SECRET_KEY"] == PRODUCTION_KEY
    assert _settings(monkeypatch, DEBUG="true")["SECRET_KEY"]  # a development machine
    # As Django generates them: may start with "$", which is not a variable to expand.
    assert _settings(monkeypatch, SECRET_KEY="$" + PRODUCTION_KEY)["SECRET_KEY"] == "$" + PRODUCTION_KEY


@pytest.mark.parametrize(
    "old, new, value, read",
    [
        ("DATABASE_POOL_MODE", "JOBS_DATABASE_POOL_MODE", "transaction", "transaction"),
        ("DJANGO_Q_SCHEDULER_ONLY", "JOBS_DJANGO_Q_SCHEDULER_ONLY", "false", False),
    ],
)
def test_renamed_variable__the_old_name_still_works_with_a_deprecation_warning(
    monkeypatch, old, new, value, read
):
    monkeypatch.delenv(old, raising=False)
    with pytest.warns(
        DeprecationWarning, match=f"The environment variable {old} is deprecated: name it {new}"
    ):
        assert _settings(monkeypatch, DEBUG="true", **{old: value})[new] == read
    assert new not in os.environ


def test_https__secure_by_default_when_debug_is_off(monkeypatch):
    production = _settings(monkeypatch, SECRET_KEY=PRODUCTION_KEY)
    development = _settings(monkeypatch, DEBUG="true")

    names = [
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
    ]
    assert [production[name] for name in names] == [True] * len(names)
    assert production["SECURE_HSTS_SECONDS"] == 31_536_000
    assert [development[name] for name in names] == [False] * len(names)
    assert development["SECURE_HSTS_SECONDS"] == 0
    for settings in (production, development):
        assert settings["SECURE_PROXY_SSL_HEADER"] is None  # only behind a proxy that sets it
        assert settings["CSRF_TRUSTED_ORIGINS"] == []


def test_https__every_setting_is_read_from_the_environment(monkeypatch):
    settings = _settings(
        monkeypatch,
        SECRET_KEY=PRODUCTION_KEY,
        SECURE_SSL_REDIRECT="false",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        SECURE_HSTS_SECONDS="60",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="false",
        SECURE_HSTS_PRELOAD="false",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https",
        CSRF_TRUSTED_ORIGINS="https://jobs.example.com,https://*.example.org",
    )

    assert settings["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert settings["CSRF_TRUSTED_ORIGINS"] == ["https://jobs.example.com", "https://*.example.org"]
    assert settings["SECURE_HSTS_SECONDS"] == 60
    for name in (
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
    ):
        assert settings[name] is False, name


@pytest.mark.parametrize(
    "variable, value",
    [
        ("SECURE_PROXY_SSL_HEADER", "https"),
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto:"),
        ("CSRF_TRUSTED_ORIGINS", "jobs.example.com"),
        ("CSRF_TRUSTED_ORIGINS", "https://jobs.example.com/admin/"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("SECURE_SSL_REDIRECT", "sometimes"),
    ],
)
def test_https__a_malformed_setting_stops_start_up_naming_it(monkeypatch, variable, value):
    with pytest.raises(ImproperlyConfigured, match=f"Setting {variable}"):
        _settings(monkeypatch, SECRET_KEY=PRODUCTION_KEY, **{variable: value})


def test_csp__is_sent_with_nonces_for_inline_scripts_and_styles_and_nothing_unsafe(monkeypatch):
    settings = _settings(monkeypatch, SECRET_KEY=PRODUCTION_KEY)

    assert "django.middleware.csp.ContentSecurityPolicyMiddleware" in settings["MIDDLEWARE"]
    [templates] = settings["TEMPLATES"]
    assert "django.template.context_processors.csp" in templates["OPTIONS"]["context_processors"]
    policy = settings["SECURE_CSP"]
    assert policy["script-src"] == [CSP.SELF, CSP.NONCE] and policy["style-src"] == [CSP.SELF, CSP.NONCE]
    assert not any(CSP.UNSAFE_INLINE in values or CSP.UNSAFE_EVAL in values for values in policy.values())


# --- start-up, as manage.py does it ------------------------------------------------------

PRODUCTION_LIKE = {
    "SECRET_KEY": PRODUCTION_KEY,
    "ALLOWED_HOSTS": "jobs.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://jobs.example.com",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https",
    "DATABASE_URL": "postgres://platform:pw@db.internal:5432/platform",
    "EMAIL_HOST": "smtp.example.com",
    "EMAIL_HOST_PASSWORD": "smtp-password",
    "QDRANT_URL": "https://qdrant.internal:6333",
    "CREDENTIALS_KEYS": "MlMOa0OH8cyF9Bgd0jw0p_qc_GCx-rdgPEwfqdM_ibg=",  # a Fernet key of its own, as check --deploy asks
}


def _manage(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JOBS_", "DATABASE_URL", "DJANGO_", "SECURE_", "SESSION_", "CSRF_"))
        and key not in ("DEBUG", "SECRET_KEY")
    }
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path), **variables)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _manage_check(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    return _manage(tmp_path, "check", **{"DEBUG": "true", **variables})


@pytest.mark.slow  # starts manage.py
@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("JOBS_POLL_INTERVAL", "soon", "Setting JOBS_POLL_INTERVAL must be a number, got 'soon'"),
        ("DATABASE_URL", "nosuchdb://nowhere", "Setting DATABASE_URL"),
        (
            "JOBS_DATABASE_POOL_MODE",
            "statement",
            "Setting JOBS_DATABASE_POOL_MODE must be one of session, transaction",
        ),
        ("JOBS_MAX_PAYLOAD_BYTES", "64k", "Setting JOBS_MAX_PAYLOAD_BYTES must be a whole number, got '64k'"),
    ],
)
def test_start_up__stops_with_a_message_naming_the_malformed_setting(tmp_path, variable, value, message):
    result = _manage_check(tmp_path, **{variable: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


@pytest.mark.slow  # starts manage.py
@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("JOBS_ACK_BATCH", "0", "(platform.E001) Setting JOBS_ACK_BATCH must be at least 1."),
        ("JOBS_MAX_RUN_AT_DAYS", "0", "(platform.E001) Setting JOBS_MAX_RUN_AT_DAYS must be at least 0.01."),
        (
            "JOBS_ADMIN_TEXT_CHARS",
            "10",
            "(platform.E001) Setting JOBS_ADMIN_TEXT_CHARS must be at least 100.",
        ),
        (
            "JOBS_LISTEN_DATABASE_URL",
            "sqlite:///x",
            "(platform.E003) Setting JOBS_LISTEN_DATABASE must be a PostgreSQL database",
        ),
    ],
)
def test_check__names_the_engine_setting_out_of_its_range(tmp_path, variable, value, message):
    result = _manage_check(tmp_path, **{variable: value})
    assert result.returncode != 0
    assert "SystemCheckError" in result.stderr
    assert message in result.stderr


@pytest.mark.slow  # starts manage.py
def test_start_up__passes_with_the_embedded_defaults_on_a_development_machine(tmp_path):
    result = _manage_check(tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow  # starts manage.py
def test_check__refuses_the_supervisor_session_setting_behind_a_transaction_pooler(tmp_path):
    result = _manage_check(tmp_path, JOBS_DATABASE_POOL_MODE="transaction", JOBS_WORKER_ASYNC_COMMIT="true")
    assert result.returncode != 0
    assert (
        "(platform.E002) Setting JOBS_WORKER_ASYNC_COMMIT must be false with JOBS_DATABASE_POOL_MODE=transaction"
        in result.stderr
    )


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
        JOBS_DATABASE_POOL_MODE="transaction",
        SECRET_KEY="a-test-key-" + "x" * 40,
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


@pytest.mark.slow  # starts manage.py
def test_start_up__stops_without_a_secret_key_when_debug_is_off(tmp_path):
    result = _manage(tmp_path, "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured: Setting SECRET_KEY is required when DEBUG is off" in result.stderr


@pytest.mark.slow  # starts manage.py
def test_start_up__a_malformed_database_url_does_not_print_its_password(tmp_path):
    result = _manage_check(tmp_path, DATABASE_URL="postgres://platform:s3cr3t-pw@db.internal:port/platform")
    assert result.returncode != 0
    assert "Setting DATABASE_URL is not a database URL" in result.stderr
    assert "s3cr3t" not in result.stderr + result.stdout


@pytest.mark.slow  # starts manage.py
def test_check_deploy__a_production_like_environment_gets_no_warning(tmp_path):
    result = _manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_LIKE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.slow  # starts manage.py
def test_check_deploy__the_email_index_in_local_mode_is_a_warning(tmp_path):
    local = {key: value for key, value in PRODUCTION_LIKE.items() if key != "QDRANT_URL"}
    result = _manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **local)
    assert result.returncode != 0
    assert (
        "pipeline.W001" in result.stderr + result.stdout
        and "QDRANT_URL is not set" in result.stderr + result.stdout
    )


def test_mariadb__a_mysql_url_selects_mysqlclient_with_utf8mb4_read_committed_and_utc(monkeypatch):
    found = _settings(monkeypatch, DEBUG="true", DATABASE_URL="mysql://platform:pw@db.internal:3306/platform")
    database = found["DATABASES"]["default"]  # type: ignore[index]
    assert database["ENGINE"] == "django.db.backends.mysql"
    options = database["OPTIONS"]
    assert (options["charset"], options["collation"], options["isolation_level"]) == (
        "utf8mb4",
        "utf8mb4_unicode_ci",
        "read committed",
    )
    assert "STRICT_TRANS_TABLES" in options["init_command"]
    assert database["TEST"] == {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
    # Django's warnings about partial indexes are silenced only where migrations replace them.
    assert "models.W037" in found["SILENCED_SYSTEM_CHECKS"]  # type: ignore[operator]
    assert "models.W037" not in _settings(monkeypatch, DEBUG="true").get("SILENCED_SYSTEM_CHECKS", [])  # type: ignore[operator]


def test_model_requests_per_minute__is_the_ai_queues_rate_across_the_fleet(monkeypatch):
    assert _settings(monkeypatch, DEBUG="true")["JOBS_QUEUES"] == {}  # 0 (the default): no limit
    found = _settings(monkeypatch, DEBUG="true", MODEL_REQUESTS_PER_MINUTE="120")
    assert found["JOBS_QUEUES"] == {"ai": {"rate": "120/m"}}
    with pytest.raises(ImproperlyConfigured, match="MODEL_REQUESTS_PER_MINUTE must be at most 100000"):
        _settings(monkeypatch, DEBUG="true", MODEL_REQUESTS_PER_MINUTE="1000000")
