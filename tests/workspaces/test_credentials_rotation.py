"""Rotating CREDENTIALS_KEYS: a new key first, the old after it, ``rotate_credentials``, then
the old key can go."""

from __future__ import annotations

from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from workspaces import credentials
from workspaces.models import Repository, WorkConnection

from .factories import RepositoryFactory, WorkConnectionFactory

pytestmark = pytest.mark.django_db

OLD, NEW, LOST = (Fernet.generate_key().decode() for _ in range(3))


def test_rotate_credentials__reencrypts_every_stored_credential_under_the_first_key(settings):
    settings.CREDENTIALS_KEYS = [OLD]
    connection = WorkConnectionFactory(credential=credentials.encrypt("jira-token"))
    repository = RepositoryFactory(url="https://bot:gh-token@github.com/acme/api.git")
    settings.CREDENTIALS_KEYS = [LOST]
    orphan = WorkConnectionFactory(credential=credentials.encrypt("lost-token"))
    settings.CREDENTIALS_KEYS = [NEW, OLD]
    out, err = StringIO(), StringIO()

    call_command("rotate_credentials", stdout=out, stderr=err)

    assert "2 credentials re-encrypted, 1 no key decrypts" in out.getvalue()
    assert "Enter those again" in err.getvalue()
    settings.CREDENTIALS_KEYS = [NEW]  # the old key is dropped
    assert credentials.decrypt(WorkConnection.objects.get(pk=connection.pk).credential) == "jira-token"
    assert credentials.decrypt(Repository.objects.get(pk=repository.pk).credential) == "bot:gh-token"
    assert WorkConnection.objects.get(pk=orphan.pk).credential == orphan.credential  # left as it was


def test_rotate_credentials__binds_a_credential_stored_before_binding_to_its_address(settings):
    settings.CREDENTIALS_KEYS = [OLD]
    connection = WorkConnectionFactory(
        kind="clickup",
        api_url="",
        credential=credentials.encrypt("pk_old_token"),  # unbound, as before
    )
    repository = RepositoryFactory(
        url="https://***@github.com/acme/api.git", credential=credentials.encrypt("a:b")
    )
    settings.CREDENTIALS_KEYS = [NEW, OLD]

    call_command("rotate_credentials", stdout=StringIO(), stderr=StringIO())

    settings.CREDENTIALS_KEYS = [NEW]
    assert credentials.opened(WorkConnection.objects.get(pk=connection.pk).credential) == credentials.Opened(
        "pk_old_token", "https://api.clickup.com:443"
    )
    assert credentials.opened(Repository.objects.get(pk=repository.pk).credential) == credentials.Opened(
        "a:b", "https://github.com:443"
    )
