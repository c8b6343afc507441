"""A repository's stored credential goes only where it was given: real git against local
smart-HTTP servers (``git http-backend``) that record every request's headers.

- a URL edited to another scheme, host or port drops the credential (the admin refuses the
  edit until the credential is given again), and a URL changed behind the model's back is
  refused at fetch time: git sends nothing there;
- a credential goes over plain HTTP only to a host ``CREDENTIALS_PLAIN_HTTP_HOSTS`` names;
- a host answering 301 to another host gets nothing more, and the other host no header.
"""

from __future__ import annotations

import base64
import contextlib
import re
from pathlib import Path

import pytest
from django.urls import reverse
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.support.git_repos import Origin, http_backend
from workspaces import credentials
from workspaces.errors import RepositoryFetchFailed, RepositoryRefused
from workspaces.models import Repository
from workspaces.services import ingest

from .factories import RepositoryFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("repositories_root")]  # git

SECRET = "ada:s3cret-token"
BASIC = "Basic " + base64.b64encode(SECRET.encode()).decode()


@pytest.fixture
def served(tmp_path) -> Path:
    Origin(tmp_path / "served").commit({"main.py": "print()\n"})
    return tmp_path / "served"


def _serve(server: HTTPServer, root: Path, credential: str = SECRET) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = []
    server.expect_request(re.compile("^/")).respond_with_handler(http_backend(root, credential, seen))
    return seen


def _with_secret(url: str) -> str:
    return url.replace("http://", f"http://{SECRET}@", 1)


def _authorized(seen: list[dict[str, str]]) -> list[dict[str, str]]:
    return [headers for headers in seen if "Authorization" in headers]


def test_credential__an_edited_url_on_another_host_drops_it_and_git_sends_it_nowhere(
    httpserver, other_host, served
):
    _serve(httpserver, served)
    elsewhere = _serve(other_host, served)
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})
    ingest.ingest_repository(repository.pk)  # the credential works where it was given

    repository.refresh_from_db()
    repository.url = other_host.url_for("/origin.git").replace("http://", "http://***@")
    repository.save()

    repository.refresh_from_db()
    assert repository.credential == ""
    with pytest.raises(RepositoryRefused):
        ingest.ingest_repository(repository.pk)  # 401: no credential any more
    assert elsewhere and not _authorized(elsewhere)


@pytest.mark.parametrize("change", ["port", "scheme"])
def test_credential__another_port_or_scheme_is_another_origin(httpserver, served, change):
    _serve(httpserver, served)
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})
    assert repository.credential
    edited = repository.url.replace(f":{httpserver.port}/", ":1/") if change == "port" else repository.url
    if change == "scheme":
        edited = edited.replace("http://", "https://")

    repository.url = edited
    repository.save()

    assert Repository.objects.get(pk=repository.pk).credential == ""


def test_credential__a_url_changed_behind_the_model_is_refused_before_git_sends_anything(
    httpserver, other_host, served
):
    _serve(httpserver, served)
    elsewhere = _serve(other_host, served)
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})
    Repository.objects.filter(pk=repository.pk).update(
        url=other_host.url_for("/origin.git").replace("http://", "http://***@")
    )

    with pytest.raises(RepositoryRefused, match="was given for another host"):
        ingest.ingest_repository(repository.pk)
    assert elsewhere == []  # git never ran


def test_credential__removing_the_stars_from_the_url_drops_it(httpserver, served):
    seen = _serve(httpserver, served)
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})

    repository.url = httpserver.url_for("/origin.git")
    repository.save()

    assert Repository.objects.get(pk=repository.pk).credential == ""
    with pytest.raises(RepositoryRefused):
        ingest.ingest_repository(repository.pk)
    assert seen and not _authorized(seen)


def test_credential__goes_over_plain_http_only_to_a_host_the_setting_names(httpserver, served, settings):
    seen = _serve(httpserver, served)
    settings.CREDENTIALS_PLAIN_HTTP_HOSTS = []  # production's default
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})

    with pytest.raises(RepositoryRefused, match="sent over HTTPS only"):
        ingest.ingest_repository(repository.pk)
    assert seen == []
    repository.refresh_from_db()
    assert "HTTPS only" in repository.ingest_error and "s3cret" not in repository.ingest_error

    settings.CREDENTIALS_PLAIN_HTTP_HOSTS = ["localhost"]
    ingest.ingest_repository(repository.pk)
    assert Repository.objects.get(pk=repository.pk).status == "ingested"
    assert _authorized(seen)


def test_credential__a_redirect_to_another_host_is_not_followed_and_carries_no_header(
    httpserver, other_host, served
):
    elsewhere = _serve(other_host, served, credential="")  # serves anyone, as a taker would
    moved: list[dict[str, str]] = []

    def redirect(request: Request) -> Response:
        moved.append(dict(request.headers))
        target = other_host.url_for(request.full_path.removesuffix("?"))
        return Response("", status=301, headers={"Location": target})

    httpserver.expect_request(re.compile("^/")).respond_with_handler(redirect)
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})

    with contextlib.suppress(RepositoryRefused, RepositoryFetchFailed):
        ingest.ingest_repository(repository.pk)

    assert moved and all(headers.get("Authorization") == BASIC for headers in moved)  # its own host
    assert not _authorized(elsewhere)
    assert elsewhere == []  # not followed at all
    assert Repository.objects.get(pk=repository.pk).ingest_error  # the fetch failed, and says so


def test_admin__refuses_an_edit_to_another_host_while_the_stored_credential_is_kept(
    admin_client, httpserver, other_host
):
    repository = RepositoryFactory(url=_with_secret(httpserver.url_for("/origin.git")), metadata={})
    stored = repository.credential
    change = reverse("admin:workspaces_repository_change", args=[repository.pk])
    form = {
        "workspace": repository.workspace_id,
        "name": repository.name,
        "full_name": "",
        "local_path": "",
        "metadata": "{}",
    }

    kept_stars = other_host.url_for("/origin.git").replace("http://", "http://***@")
    response = admin_client.post(change, {**form, "url": kept_stars})

    assert response.status_code == 200
    assert "give the credential again" in response.content.decode()
    assert Repository.objects.get(pk=repository.pk).credential == stored

    response = admin_client.post(change, {**form, "url": _with_secret(other_host.url_for("/origin.git"))})
    assert response.status_code == 302
    repository.refresh_from_db()
    assert repository.credential != stored
    assert credentials.opened(repository.credential).origin == f"http://127.0.0.1:{other_host.port}"
