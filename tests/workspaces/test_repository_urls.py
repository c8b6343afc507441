"""Repository URLs are parsed once, the way git and curl read them: what the parsers would
read differently is refused, and its user part is never stored, shown or logged."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from workspaces import addresses
from workspaces.errors import RepositoryRefused
from workspaces.models import Repository
from workspaces.services import ingest

from .factories import RepositoryFactory

TOKEN = "ghp_s3cretTOKEN1234"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        (f"https:///ada:{TOKEN}@github.com/acme/api.git", "needs a host right after"),
        (f"https://ada:{TOKEN}@[github.com]/acme/api.git", "not an IPv6 address"),
        (f"https://ada:{TOKEN}@[::1/acme/api.git", "not an IPv6 address"),
        (f"https://ada:{TOKEN}@evil.example@github.com/acme/api.git", "user part"),
        (f"https://ada:{TOKEN}@github.com\\@evil.example/acme/api.git", "backslash"),
        (f"https://ada:{TOKEN}@git%68ub.com/acme/api.git", "not a host name"),
        (f"https://ada:{TOKEN}@github.com:99999/acme/api.git", "port"),
        (f"https://ada:{TOKEN}@github.com/acme/api.git#frag", "query or fragment"),
        ("file://etc/passwd", "no host"),
        ("ext::sh -c touch% /tmp/pwned", "spaces"),
        ("--upload-pack=touch /tmp/pwned", "option"),
        ("relative/path", "absolute path"),
        ("gopher://github.com/acme/api.git", "not allowed"),
    ],
)
def test_parse__refuses_what_git_curl_and_python_read_differently_without_repeating_the_token(url, words):
    with pytest.raises(addresses.AddressRefused, match=words) as refused:
        addresses.parse(url)
    assert TOKEN not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://github.com/acme/api.git", "https://github.com:443"),
        ("HTTPS://GitHub.com:8443/acme/api.git", "https://github.com:8443"),
        ("https://[2001:db8::1]/acme/api.git", "https://[2001:db8::1]:443"),
        ("ssh://git@github.com/acme/api.git", "ssh://github.com:22"),
        ("git@github.com:acme/api.git", "ssh://github.com:22"),
        ("file:///srv/git/api.git", ""),
        ("/srv/git/api.git", ""),
    ],
)
def test_parse__reads_the_urls_git_takes(url, origin):
    assert addresses.parse(url).origin == origin


def test_take_credential__takes_out_the_user_part_and_sends_it_decoded_as_curl_would():
    url, secret = addresses.take_credential("https://ada:pa%40ss@github.com/acme/api.git")
    assert (url, secret) == ("https://***@github.com/acme/api.git", "ada:pa%40ss")
    assert addresses.parse(url).basic_credential(secret) == "ada:pa@ss"
    assert addresses.take_credential("ssh://git:pw@host/x.git") == ("ssh://git:***@host/x.git", "pw")
    assert addresses.for_git("https://***@github.com/acme/a@b.git") == "https://github.com/acme/a@b.git"


@pytest.mark.django_db
def test_save__a_url_with_no_host_keeps_no_token_in_clear_and_ingest_says_why_without_it(caplog):
    caplog.set_level(logging.DEBUG)
    repository = RepositoryFactory(url=f"https:///ada:{TOKEN}@github.com/acme/api.git", metadata={})

    stored = Repository.objects.get(pk=repository.pk)
    assert TOKEN not in stored.url and stored.url == "https:///***@github.com/acme/api.git"
    with pytest.raises(RepositoryRefused, match="needs a host") as refused:
        ingest.ingest_repository(repository.pk)

    assert TOKEN not in str(refused.value)
    assert TOKEN not in Repository.objects.get(pk=repository.pk).ingest_error
    assert TOKEN not in caplog.text


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        f"https://ada:{TOKEN}@[github.com]/acme/api.git",
        f"https://ada:{TOKEN}@[::1/acme/api.git",
        f"https:///ada:{TOKEN}@github.com/acme/api.git",
    ],
)
def test_admin__a_url_the_parsers_read_differently_is_a_form_error_not_a_500(admin_client, url, caplog):
    repository = RepositoryFactory(url="https://github.com/acme/api.git", metadata={})
    change = reverse("admin:workspaces_repository_change", args=[repository.pk])
    form = {"workspace": repository.workspace_id, "name": "api", "url": url, "metadata": "{}"}

    response = admin_client.post(change, form)

    assert response.status_code == 200
    assert TOKEN not in response.content.decode() and TOKEN not in caplog.text
    assert Repository.objects.get(pk=repository.pk).url == "https://github.com/acme/api.git"


@pytest.mark.django_db
def test_admin__a_refused_credential_is_never_shown_back_in_the_form(admin_client, settings):
    settings.CREDENTIALS_PLAIN_HTTP_HOSTS = []  # production's default
    repository = RepositoryFactory(url="https://github.com/acme/api.git", metadata={})
    change = reverse("admin:workspaces_repository_change", args=[repository.pk])
    form = {"workspace": repository.workspace_id, "name": "api", "metadata": "{}"}

    response = admin_client.post(change, {**form, "url": f"http://ada:{TOKEN}@git.example.com/acme/api.git"})

    page = response.content.decode()
    assert response.status_code == 200 and "sent over HTTPS only" in page
    assert TOKEN not in page and "http://***@git.example.com/acme/api.git" in page
