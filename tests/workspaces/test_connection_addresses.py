"""A work connection's token goes only to its provider: the API address is checked (HTTPS,
the provider's own hosts or ``PROVIDER_ALLOWED_HOSTS``, no loopback, link-local or private
address unless ``PROVIDER_ALLOWED_NETWORKS`` holds it), the stored token is dropped when the
address moves to another host and handed out only for the address it was entered for, a
foreign answer is never repeated in "Last error", and identifiers that go into a URL path
are checked against the provider's format. Against local stand-ins of the providers
(``tests/support/trackers.py``), which the test settings allow by name, as an operator would."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime

import pytest
from django.urls import reverse
from pytest_httpserver import HTTPServer

from tests.support import trackers as fakes
from workspaces import addresses, credentials
from workspaces.errors import ProviderNotConfigured
from workspaces.models import WorkConnection
from workspaces.services.work_items import sync_connection

from .factories import WorkConnectionFactory

TOKENS = {"jira": fakes.JIRA_TOKEN, "clickup": fakes.CLICKUP_TOKEN, "monday": fakes.MONDAY_TOKEN}


@pytest.fixture
def production(settings):
    """Production's defaults: no extra host, no private range, no plain HTTP."""
    settings.PROVIDER_ALLOWED_HOSTS = []
    settings.PROVIDER_ALLOWED_NETWORKS = []
    settings.CREDENTIALS_PLAIN_HTTP_HOSTS = []


@pytest.fixture(autouse=True)
def live_trackers(settings):
    settings.WORK_TRACKER = "api"


@pytest.mark.parametrize(
    ("kind", "url", "words"),
    [
        ("clickup", "http://api.clickup.com/api/v2", "must be https"),
        ("jira", "https://acme.example.com", "not one of the provider's own"),
        ("jira", "https://acme.atlassian.net.example.com", "not one of the provider's own"),
        ("monday", "https://api.clickup.com/v2", "not one of the provider's own"),
        ("jira", "https://10.0.0.5", "not one of the provider's own"),
        ("jira", "https://bot:pw@acme.atlassian.net", "user part"),
        ("jira", "https://acme.atlassian.net/../admin", "'..'"),
        ("clickup", "https://[::1]/api/v2", "not one of the provider's own"),
        ("jira", "https://acme.atlassian.net%2f@evil.example", "user part"),
    ],
)
def test_api_address__refuses_hosts_a_token_must_not_go_to(production, kind, url, words):
    with pytest.raises(addresses.AddressRefused, match=words):
        addresses.api_address(kind, url)


def test_api_address__takes_the_providers_own_hosts(production):
    assert (
        addresses.api_address("jira", "https://acme.atlassian.net/").origin
        == "https://acme.atlassian.net:443"
    )
    assert (
        addresses.api_address("clickup", "https://api.clickup.com/api/v2").url
        == "https://api.clickup.com/api/v2"
    )
    assert addresses.api_address("monday", "https://api.monday.com/v2").host == "api.monday.com"


@pytest.mark.parametrize("host", ["169.254.169.254", "127.0.0.1", "10.1.2.3", "192.168.0.10", "[::1]"])
def test_api_address__an_allowed_host_at_a_private_address_is_refused_unless_its_network_is(
    production, settings, host
):
    settings.PROVIDER_ALLOWED_HOSTS = [host.strip("[]")]
    with pytest.raises(addresses.AddressRefused, match="loopback, link-local, private"):
        addresses.api_address("jira", f"https://{host}")
    settings.PROVIDER_ALLOWED_NETWORKS = [ipaddress.ip_network(f"{host.strip('[]')}")]
    assert addresses.api_address("jira", f"https://{host}").host == host.strip("[]")


def test_api_address__a_name_resolving_to_loopback_is_refused_before_a_sync(production, settings):
    settings.PROVIDER_ALLOWED_HOSTS = ["localhost"]
    address = addresses.api_address("jira", "https://localhost:8443")
    with pytest.raises(addresses.AddressRefused, match="is at .*loopback"):
        addresses.check_resolved(address)
    settings.PROVIDER_ALLOWED_NETWORKS = [
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    ]
    addresses.check_resolved(address)


# --- Against the providers' stand-ins ------------------------------------------------------


def _connection(kind: str, server: HTTPServer) -> tuple[WorkConnection, fakes._Fake]:
    fake: fakes._Fake
    if kind == "jira":
        fake = fakes.FakeJira(server)
        url, external_id = fake.url, "PAY"
    elif kind == "clickup":
        fake = fakes.FakeClickUp(server)
        url, external_id = fake.api_url, fake.list_id
    else:
        fake = fakes.FakeMonday(server)
        url, external_id = fake.api_url, fake.board_id
    connection = WorkConnectionFactory(
        kind=kind,
        external_id=external_id,
        api_url=url,
        account=fakes.JIRA_EMAIL,
        credential=credentials.seal(TOKENS[kind], addresses.api_origin(kind, url)),
    )
    return connection, fake


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["jira", "clickup", "monday"])
def test_sync__an_address_production_refuses_gets_no_request_and_says_why(httpserver, production, kind):
    connection, fake = _connection(kind, httpserver)

    with pytest.raises(ProviderNotConfigured, match="must be https|PROVIDER_ALLOWED_HOSTS"):
        sync_connection(connection.pk)

    assert fake.requests == []
    connection.refresh_from_db()
    assert "PROVIDER_ALLOWED_HOSTS" in connection.last_error or "https" in connection.last_error


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["jira", "clickup", "monday"])
def test_sync__a_token_entered_for_another_address_is_not_sent(httpserver, other_host, kind):
    connection, _ = _connection(kind, httpserver)
    _, elsewhere = _connection(kind, other_host)
    # Changed behind the model's back (save() would have dropped the token).
    WorkConnection.objects.filter(pk=connection.pk).update(
        api_url=connection.api_url.replace(f"localhost:{httpserver.port}", f"127.0.0.1:{other_host.port}")
    )

    with pytest.raises(ProviderNotConfigured, match="entered for another API address"):
        sync_connection(connection.pk)
    assert elsewhere.requests == []


@pytest.mark.django_db
def test_sync__an_address_saved_on_another_host_drops_the_token(httpserver, other_host):
    connection, _ = _connection("clickup", httpserver)
    connection.api_url = f"http://127.0.0.1:{other_host.port}/api/v2"
    connection.save()

    assert WorkConnection.objects.get(pk=connection.pk).credential == ""
    with pytest.raises(ProviderNotConfigured, match="no API token"):
        sync_connection(connection.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, b"<html><title>intranet admin</title>db_password=hunter2</html>"),
        (200, b"<html>intranet admin db_password=hunter2</html>"),
        (500, b"db_password=hunter2"),
    ],
)
def test_sync__a_foreign_answer_is_never_repeated_in_last_error(httpserver, status, body):
    connection, fake = _connection("jira", httpserver)
    fake.trouble.append((status, {}, body))

    with pytest.raises(Exception):  # noqa: B017 - which failure depends on the status
        sync_connection(connection.pk)

    connection.refresh_from_db()
    assert connection.last_error and "hunter2" not in connection.last_error
    assert "intranet" not in connection.last_error


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "external_id"),
    [("clickup", "../../team/1"), ("clickup", "900100?x=1"), ("monday", "1 OR 2"), ("jira", "PAY/../X")],
)
def test_sync__an_identifier_not_of_the_providers_format_is_refused_before_any_request(
    httpserver, kind, external_id
):
    connection, fake = _connection(kind, httpserver)
    WorkConnection.objects.filter(pk=connection.pk).update(external_id=external_id)

    with pytest.raises(ProviderNotConfigured, match="no valid"):
        sync_connection(connection.pk)
    assert fake.requests == []


@pytest.mark.django_db
def test_sync__the_list_id_is_quoted_into_the_path(httpserver):
    connection, fake = _connection("clickup", httpserver)
    fake.add_task("t1", "One", updated=datetime.now(UTC))
    sync_connection(connection.pk)
    assert [request.path for request in fake.requests] == ["/api/v2/list/900100/task"]


# --- The admin ------------------------------------------------------------------------------


def _form(connection: WorkConnection, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "workspace": connection.workspace_id,
        "kind": connection.kind,
        "name": connection.name,
        "external_id": connection.external_id,
        "active": "on",
        "api_url": connection.api_url,
        "account": connection.account,
        "snapshot": "[]",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value != ""}


@pytest.mark.django_db
def test_admin__moving_the_address_to_another_host_drops_the_token_and_says_so(admin_client, settings):
    settings.PROVIDER_ALLOWED_HOSTS = ["jira.acme.example"]
    connection = WorkConnectionFactory(kind="jira", external_id="PAY", api_url="https://acme.atlassian.net")
    change = reverse("admin:workspaces_workconnection_change", args=[connection.pk])
    admin_client.post(change, _form(connection, api_token="tok-1234"))
    connection.refresh_from_db()
    assert credentials.opened(connection.credential) == credentials.Opened(
        "tok-1234", "https://acme.atlassian.net:443"
    )

    response = admin_client.post(change, _form(connection, api_url="https://jira.acme.example"), follow=True)

    connection.refresh_from_db()
    assert connection.credential == ""
    assert "the token was removed" in response.content.decode()

    admin_client.post(change, _form(connection, api_url="https://jira.acme.example", api_token="tok-5678"))
    connection.refresh_from_db()
    assert credentials.opened(connection.credential).origin == "https://jira.acme.example:443"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"api_url": "https://metadata.internal/latest"}, "PROVIDER_ALLOWED_HOSTS"),
        ({"api_url": "http://acme.atlassian.net"}, "must be https"),
        ({"kind": "clickup", "external_id": "../../team/1", "api_url": ""}, "Not a valid ClickUp list id"),
    ],
)
def test_admin__refuses_an_address_or_identifier_the_rules_do_not_take(
    admin_client, production, changes, words
):
    connection = WorkConnectionFactory(kind="jira", external_id="PAY", api_url="https://acme.atlassian.net")
    change = reverse("admin:workspaces_workconnection_change", args=[connection.pk])

    response = admin_client.post(change, _form(connection, **changes))

    assert response.status_code == 200 and words in response.content.decode()
    assert WorkConnection.objects.get(pk=connection.pk).api_url == "https://acme.atlassian.net"


@pytest.mark.django_db
def test_admin__a_token_with_malformed_credentials_keys_is_a_form_error_not_a_500(admin_client, settings):
    connection = WorkConnectionFactory(kind="jira", external_id="PAY", api_url="https://acme.atlassian.net")
    settings.CREDENTIALS_KEYS = ["not-a-fernet-key"]
    change = reverse("admin:workspaces_workconnection_change", args=[connection.pk])

    response = admin_client.post(change, _form(connection, api_token="tok-1234"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "CREDENTIALS_KEYS is not a list of Fernet keys" in page and "not-a-fernet-key" not in page
