"""The admin of work connections and webhook deliveries: what a connection's page shows, its
write-only token, its Sync now button, and deliveries listed read-only."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job
from workspaces import credentials
from workspaces.models import SourceItem, WebhookDelivery, WorkConnection

from .factories import WorkConnectionFactory

pytestmark = pytest.mark.django_db

TOKEN = "ATATT3xFfGF0-secret-api-token"


def _change(connection: WorkConnection) -> str:
    return reverse("admin:workspaces_workconnection_change", args=[connection.pk])


def _form(connection: WorkConnection, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "workspace": connection.workspace_id,
        "kind": connection.kind,
        "name": connection.name,
        "external_id": connection.external_id,
        "active": "on" if connection.active else "",
        "api_url": connection.api_url,
        "account": connection.account,
        "webhook_id": connection.webhook_id,
        "snapshot": "[]",
        "api_token": "",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value != ""}


def test_connection_page__shows_kind_last_sync_counts_last_error_and_where_it_reads_from(admin_client):
    connection = WorkConnectionFactory(
        kind="jira",
        external_id="PAY",
        last_synced_at=timezone.now(),
        item_count=2,
        last_sync_counts={"created": 2, "updated": 0, "deleted": 1, "restored": 0, "listed": 2, "full": True},
        last_error="Jira answered 503 for connection #1.",
    )
    SourceItem.objects.create(
        connection=connection, external_id="PAY-9", title="Gone", deleted_at=timezone.now()
    )

    page = admin_client.get(_change(connection)).content.decode()

    assert "Jira" in page and "Jira answered 503" in page
    assert "2 mirrored, 1 marked deleted" in page
    assert "2 new, 0 updated, 1 deleted, 0 restored (full listing, 2 listed)" in page
    assert "stored snapshot (embedded default" in page  # WORK_TRACKER=stored, and it says so
    assert "Sync now" in page


def test_connection_list__shows_kind_last_sync_items_and_last_error(admin_client):
    WorkConnectionFactory(name="Payments", kind="clickup", item_count=7, last_error="ClickUp answered 500.")
    page = admin_client.get(reverse("admin:workspaces_workconnection_changelist")).content.decode()
    assert "Payments" in page and "ClickUp" in page and "ClickUp answered 500." in page


def test_token__is_stored_encrypted_and_never_shown_back(admin_client):
    connection = WorkConnectionFactory(kind="jira", external_id="PAY")

    response = admin_client.post(_change(connection), _form(connection, api_token=TOKEN))

    assert response.status_code == 302
    connection.refresh_from_db()
    assert TOKEN not in connection.credential and credentials.decrypt(connection.credential) == TOKEN
    page = admin_client.get(_change(connection)).content.decode()
    assert TOKEN not in page and connection.credential not in page
    assert "stored encrypted (never shown)" in page


def test_token__left_empty_keeps_the_stored_one_and_can_be_removed(admin_client):
    connection = WorkConnectionFactory(kind="jira", external_id="PAY", credential=credentials.encrypt(TOKEN))
    stored = connection.credential

    admin_client.post(_change(connection), _form(connection, name="Renamed"))
    connection.refresh_from_db()
    assert (connection.name, connection.credential) == ("Renamed", stored)

    admin_client.post(_change(connection), _form(connection, forget_api_token="on"))
    connection.refresh_from_db()
    assert connection.credential == ""


def test_sync_now__pressed_twice_queues_one_sync_and_links_to_it(admin_client):
    connection = WorkConnectionFactory()
    button = reverse("admin:workspaces_workconnection_job_button", args=[connection.pk, "sync"])

    for _ in range(2):
        response = admin_client.post(button, follow=True)

    job = Job.objects.get(type="workmanagement.sync")
    assert job.payload == {"connection_id": connection.pk}
    assert f'href="/admin/platform/job/{job.pk}/change/"' in response.content.decode()


def test_sync_now__refuses_an_inactive_connection_with_a_message(admin_client):
    connection = WorkConnectionFactory(inactive=True)
    button = reverse("admin:workspaces_workconnection_job_button", args=[connection.pk, "sync"])

    response = admin_client.post(button, follow=True)

    assert not Job.objects.exists()
    assert "is inactive; activate it to sync it" in response.content.decode()
    assert response.redirect_chain[-1][0] == _change(connection)


def test_sync_now_button__is_a_post_only(admin_client):
    connection = WorkConnectionFactory()
    button = reverse("admin:workspaces_workconnection_job_button", args=[connection.pk, "sync"])
    assert admin_client.get(button).status_code == 405
    assert not Job.objects.exists()


def test_deliveries__are_listed_read_only_with_received_event_and_outcome(admin_client):
    job = Job.objects.create(type="workmanagement.sync", queue="default", payload={}, max_attempts=3)
    delivery = WebhookDelivery.objects.create(
        provider="jira",
        delivery_id="d-1",
        event="jira:issue_updated",
        outcome="queued",
        detail="jira:issue_updated PAY-1 in PAY: sync queued.",
        job_ids=[job.pk],
    )
    changelist = reverse("admin:workspaces_webhookdelivery_changelist")

    page = admin_client.get(changelist).content.decode()

    assert "jira:issue_updated" in page and "queued" in page and "sync queued" in page
    assert f'href="/admin/platform/job/{job.pk}/change/"' in page
    change = reverse("admin:workspaces_webhookdelivery_change", args=[delivery.pk])
    detail = admin_client.get(change).content.decode()
    assert "d-1" in detail and f'href="/admin/platform/job/{job.pk}/change/"' in detail
    assert 'name="_save"' not in detail  # view only: nothing to save
    assert admin_client.get(reverse("admin:workspaces_webhookdelivery_add")).status_code == 403
    assert admin_client.post(change, {"outcome": "ignored"}).status_code == 403
    delivery.refresh_from_db()
    assert delivery.outcome == "queued"
