"""The engine's settings (``jobs.conf``): one ``JOBS_`` namespace read through one accessor,
defaults in one place, nothing written onto Django's settings, and values validated by the
engine's own checks (``jobs.checks``, ids ``platform.*``)."""

from __future__ import annotations

import ipaddress
import os
import re
import warnings

import pytest
from django.conf import settings
from django.test import override_settings

from jobs import checks, conf
from jobs.conf import DEFAULTS, jobs_settings
from tests.support.paths import ROOT

# Set by this platform's settings whatever the environment says (its own choices).
CHOSEN_BY_THIS_PLATFORM = {
    "JOBS_QUEUES",
    "JOBS_DATABASE_POOL_MODE",
    "JOBS_PREPARED_STATEMENTS",
    "JOBS_WORKER_ASYNC_COMMIT",
    "JOBS_LISTEN_DATABASE",
    "JOBS_METRICS_ALLOWED_IPS",
    "JOBS_AWS_REGION",
    "JOBS_AWS_ENDPOINT_URL",
    "JOBS_DJANGO_Q_SCHEDULER_ONLY",
    "JOBS_DJANGO_Q_ALLOWED_FUNCTIONS",
}


def _ids(messages) -> list[str]:
    return [message.id for message in messages]


def _without(*names: str):
    """Settings as a project's that leaves ``names`` out (override_settings restores them)."""
    overrides = override_settings()
    overrides.enable()
    for name in names:
        if hasattr(settings, name):
            delattr(settings, name)
    return overrides


@pytest.mark.parametrize("name", sorted(set(DEFAULTS) - CHOSEN_BY_THIS_PLATFORM))
def test_engine__writes_no_default_onto_django_settings(name):
    if name in os.environ:
        pytest.skip(f"{name} is set in this environment")
    assert not hasattr(settings, name)
    assert getattr(jobs_settings, name.removeprefix("JOBS_")) == DEFAULTS[name]


def test_jobs_settings__reads_the_project_value_when_it_is_asked_for():
    with override_settings(JOBS_ACK_BATCH=7):
        assert jobs_settings.ACK_BATCH == 7
    after = jobs_settings.ACK_BATCH
    assert after == int(os.environ.get("JOBS_ACK_BATCH", 32))


def test_jobs_settings__a_value_kept_from_an_earlier_read_gives_way_to_a_change():
    before = jobs_settings.ACK_BATCH  # read, and kept
    with override_settings(JOBS_ACK_BATCH=before + 5):
        during = jobs_settings.ACK_BATCH
    after = jobs_settings.ACK_BATCH
    assert (during, after) == (before + 5, before)


def test_jobs_settings__a_left_out_setting_reads_its_default():
    overrides = _without("JOBS_POLL_INTERVAL", "JOBS_WORKER_ASYNC_COMMIT")
    try:
        assert jobs_settings.POLL_INTERVAL == 1.0
        assert jobs_settings.WORKER_ASYNC_COMMIT is True
    finally:
        overrides.disable()


def test_jobs_settings__every_engine_setting_is_under_the_jobs_prefix():
    assert DEFAULTS and all(name.startswith("JOBS_") for name in DEFAULTS)


def test_engine__reads_settings_only_through_the_accessor():
    # A direct read of an engine setting would need its default written onto Django's
    # settings; conf.py and checks.py are the accessor and its rules.
    direct = re.compile(r"\bsettings\.(JOBS_|DATABASE_POOL_MODE|AWS_|DJANGO_Q_)|getattr\(settings, \"JOBS_")
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "jobs").rglob("*.py")
        if path.name not in ("conf.py",) and direct.search(path.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "old, new, value",
    [
        ("DATABASE_POOL_MODE", "JOBS_DATABASE_POOL_MODE", "transaction"),
        ("AWS_REGION", "JOBS_AWS_REGION", "us-east-2"),
        ("AWS_ENDPOINT_URL", "JOBS_AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ("DJANGO_Q_SCHEDULER_ONLY", "JOBS_DJANGO_Q_SCHEDULER_ONLY", False),
    ],
)
def test_renamed_setting__the_old_name_still_works_with_a_deprecation_warning(monkeypatch, old, new, value):
    monkeypatch.setattr(conf, "_warned", set())
    overrides = _without(new)
    try:
        with override_settings(**{old: value}, JOBS_WORKER_ASYNC_COMMIT=False):
            with pytest.warns(DeprecationWarning, match=f"Setting {old} is deprecated: name it {new}"):
                assert getattr(jobs_settings, new.removeprefix("JOBS_")) == value
            found = [m for m in checks.check_settings() if m.id == checks.RENAMED_SETTING]
            assert [m.msg for m in found] == [f"Setting {old} is deprecated: the engine reads it as {new}."]
    finally:
        overrides.disable()


def test_renamed_setting__the_new_name_wins_without_a_warning():
    with override_settings(DATABASE_POOL_MODE="transaction", JOBS_DATABASE_POOL_MODE="session"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert jobs_settings.DATABASE_POOL_MODE == "session"
        assert checks.RENAMED_SETTING not in _ids(checks.check_settings())


def test_checks__pass_this_projects_settings():
    assert checks.check_settings() == []


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"JOBS_POLL_INTERVAL": "1"}, "Setting JOBS_POLL_INTERVAL must be a number, got str."),
        ({"JOBS_POLL_INTERVAL": True}, "Setting JOBS_POLL_INTERVAL must be a number, got bool."),
        ({"JOBS_POLL_INTERVAL": 0}, "Setting JOBS_POLL_INTERVAL must be at least 0.01."),
        ({"JOBS_ACK_BATCH": 2.5}, "Setting JOBS_ACK_BATCH must be a whole number, got float."),
        ({"JOBS_ACK_BATCH": 0}, "Setting JOBS_ACK_BATCH must be at least 1."),
        ({"JOBS_SCHEDULER": "yes"}, "Setting JOBS_SCHEDULER must be true or false, got str."),
        ({"JOBS_METRICS_TOKEN": None}, "Setting JOBS_METRICS_TOKEN must be text, got NoneType."),
        (
            {"JOBS_DATABASE_POOL_MODE": "statement"},
            "Setting JOBS_DATABASE_POOL_MODE must be one of session, transaction.",
        ),
        ({"JOBS_QUEUES": ["ai"]}, "Setting JOBS_QUEUES must be a dict, got list."),
        (
            {"JOBS_QUEUES": {"ai": {"rate": "fast"}}},
            "Setting JOBS_QUEUES is wrong: JOBS_QUEUES['ai']['rate'] must read like '60/m' "
            "(starts per s, m or h), got 'fast'.",
        ),
        (
            {"JOBS_QUEUES": {"ai": {"slots": 2}}},
            "Setting JOBS_QUEUES is wrong: JOBS_QUEUES['ai']: unknown option 'slots'; use ('concurrency', 'rate').",
        ),
        (
            {"JOBS_QUEUES": {"ai": {"concurrency": 0}}},
            "Setting JOBS_QUEUES is wrong: JOBS_QUEUES['ai']['concurrency'] must be a whole number "
            "from 1 to 100,000, got 0.",
        ),
        (
            {"JOBS_QUEUES": {"a:b": {}}},
            "Setting JOBS_QUEUES is wrong: JOBS_QUEUES: 'a:b' is not a queue name (1 to 50 characters, "
            "without ':', ',' or spaces).",
        ),
        (
            {"JOBS_METRICS_ALLOWED_IPS": ["10.0.0.0/8", "intranet"]},
            "Setting JOBS_METRICS_ALLOWED_IPS must list addresses or networks "
            "('intranet' does not appear to be an IPv4 or IPv6 network).",
        ),
    ],
)
def test_checks__name_a_setting_of_the_wrong_kind_or_out_of_range(overrides, message):
    with override_settings(**overrides):
        found = checks.check_settings()
    assert [(m.id, m.msg) for m in found] == [(checks.BAD_SETTING, message)]


def test_checks__refuse_the_asynchronous_commit_behind_a_transaction_pooler():
    with override_settings(JOBS_DATABASE_POOL_MODE="transaction", JOBS_WORKER_ASYNC_COMMIT=True):
        assert _ids(checks.check_settings()) == [checks.ASYNC_COMMIT_BEHIND_POOLER]
    with override_settings(JOBS_DATABASE_POOL_MODE="transaction", JOBS_WORKER_ASYNC_COMMIT=False):
        assert checks.check_settings() == []


def test_checks__refuse_a_listen_database_that_is_not_postgresql():
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": "x"}
    with override_settings(JOBS_LISTEN_DATABASE=sqlite):
        assert _ids(checks.check_settings()) == [checks.LISTEN_NOT_POSTGRESQL]
    postgres = {"ENGINE": "django.db.backends.postgresql", "NAME": "x", "HOST": "db"}
    with override_settings(JOBS_LISTEN_DATABASE=postgres):
        assert checks.check_settings() == []


def test_metrics_allowed_ips__are_network_objects_whether_written_as_text_or_not():
    with override_settings(
        JOBS_METRICS_ALLOWED_IPS=["10.0.0.0/8", ipaddress.ip_network("::1/128"), "127.0.0.1"]
    ):
        mixed = jobs_settings.METRICS_ALLOWED_IPS
    with override_settings(JOBS_METRICS_ALLOWED_IPS="192.168.0.0/16"):
        one = jobs_settings.METRICS_ALLOWED_IPS
    assert mixed == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
        ipaddress.ip_network("127.0.0.1/32"),
    )
    assert one == (ipaddress.ip_network("192.168.0.0/16"),)
