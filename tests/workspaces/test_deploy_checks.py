"""``manage.py check --deploy`` on CREDENTIALS_KEYS: unset (a key derived from SECRET_KEY) is
a warning, malformed (saving a token would fail) an error; no message repeats a key."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

# The system checks ask every database about its fields, and MariaDB's field types depend
# on the server's version: read from it, once per process.
pytestmark = pytest.mark.django_db

BROKEN = "c2hvcnQta2V5LXRoYXQtaXMtbm90LWZlcm5ldA=="


def _ids(**kwargs) -> dict[str, str]:
    return {message.id: message.msg + (message.hint or "") for message in run_checks(**kwargs)}


def test_check_deploy__warns_that_unset_keys_fall_back_to_secret_key(settings):
    settings.CREDENTIALS_KEYS = []
    found = _ids(include_deployment_checks=True)
    assert "derived from SECRET_KEY" in found["workspaces.W001"]
    assert settings.SECRET_KEY not in found["workspaces.W001"]
    assert "workspaces.W001" not in _ids()  # a deployment check only


def test_check_deploy__a_malformed_key_is_an_error_that_does_not_show_it(settings):
    settings.CREDENTIALS_KEYS = [Fernet.generate_key().decode(), BROKEN]
    found = _ids(include_deployment_checks=True)
    assert "Saving a credential would fail" in found["workspaces.E001"]
    assert BROKEN not in found["workspaces.E001"]
    with pytest.raises(SystemCheckError) as failure:
        call_command("check", "--deploy", "--tag", "security")
    assert "workspaces.E001" in str(failure.value) and BROKEN not in str(failure.value)


def test_check_deploy__says_nothing_of_good_keys(settings):
    settings.CREDENTIALS_KEYS = [Fernet.generate_key().decode()]
    assert not {"workspaces.W001", "workspaces.E001"} & set(_ids(include_deployment_checks=True))
