"""``manage.py demo_connections``: a work connection kept in step by webhooks, with no network.

A Jira connection reads its items from the embedded default (``WORK_TRACKER=stored``: the
snapshot stored on the connection, labelled so). Signed Jira deliveries are posted to
``/webhooks/jira/`` in this process (with a secret set for the demo's own requests): each
queues ``workmanagement.sync``, which a real ``runworker --burst`` runs. A forged delivery and
a replayed one queue nothing. Then an issue is renamed and one deleted in the snapshot, and a
``jira:issue_deleted`` delivery makes the next sync a full listing that marks it deleted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.test import Client
from django.test.utils import override_settings

import jobs
from workspaces import job_types
from workspaces.models import Organization, WorkConnection, Workspace
from workspaces.providers import work_tracker

SECRET = "demo-jira-webhook-secret"  # the demo's own requests only; production sets JIRA_WEBHOOK_SECRET
SNAPSHOT = [
    {
        "id": "PAY-1",
        "title": "Refunds for partial orders",
        "status": "In Progress",
        "updated_at": "2026-03-01T10:00:00Z",
    },
    {"id": "PAY-2", "title": "We decided to keep card data out of our database", "status": "Done"},
    {"id": "PAY-3", "title": "Spike: instalments", "status": "To Do"},
]


class Command(BaseCommand):
    help = "Keep a work connection in step through signed webhooks and runworker, on the embedded tracker."

    def handle(self, *args, **options) -> None:
        out = self.stdout
        organization, _ = Organization.objects.get_or_create(
            name="Demo organisation", defaults={"billing_email": "billing@example.com"}
        )
        workspace, _ = Workspace.objects.get_or_create(organization=organization, name="Demo shop")
        connection, _ = WorkConnection.objects.update_or_create(
            workspace=workspace,
            kind=WorkConnection.Kind.JIRA,
            external_id="PAY",
            defaults={"name": "Payments", "snapshot": SNAPSHOT, "active": True, "full_synced_at": None},
        )
        out.write(f"Connection {connection}: reads from {work_tracker(connection.kind).label}.")

        out.write(
            "\n1. Jira posts a signed delivery: a sync is queued; a forged and a replayed one queue nothing"
        )
        delivery = str(uuid.uuid4())
        self._post("jira:issue_created", delivery)
        self._post("jira:issue_created", str(uuid.uuid4()), secret="guessed-secret")
        self._post("jira:issue_created", delivery)
        self._run_worker("first")
        self._report(connection.pk)

        out.write(
            "\n2. PAY-1 renamed and PAY-3 deleted in Jira (the snapshot), then Jira's delivery of the deletion"
        )
        snapshot = [dict(item) for item in SNAPSHOT if item["id"] != "PAY-3"]
        snapshot[0].update(title="Refunds for partial and split orders", updated_at="2026-03-02T09:00:00Z")
        WorkConnection.objects.filter(pk=connection.pk).update(snapshot=snapshot)
        self._post("jira:issue_deleted", str(uuid.uuid4()))
        self._run_worker("second")
        self._report(connection.pk)
        out.write(
            "\n   Browse them in the admin: /admin/workspaces/workconnection/ (Sync now is on the connection's "
            "page) and /admin/workspaces/webhookdelivery/."
        )

    def _post(self, event: str, delivery: str, *, secret: str = SECRET) -> None:
        body = json.dumps(
            {
                "webhookEvent": event,
                "issue": {
                    "key": "PAY-3",
                    "self": "https://acme.atlassian.net/rest/api/3/issue/10003",
                    "fields": {"project": {"key": "PAY", "id": "10000"}},
                },
            }
        ).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        with override_settings(JIRA_WEBHOOK_SECRET=[SECRET], ALLOWED_HOSTS=["localhost"]):
            response = Client(HTTP_HOST="localhost").post(
                "/webhooks/jira/",
                data=body,
                content_type="application/json",
                headers={"X-Atlassian-Webhook-Identifier": delivery, "X-Hub-Signature": signature},
            )
        answer = response.json()
        forged = " (forged)" if secret != SECRET else ""
        self.stdout.write(
            f"   POST /webhooks/jira/ {event}{forged}: {response.status_code} {answer['outcome']}: {answer['detail']}"
        )

    def _run_worker(self, run: str) -> None:
        log_path = Path(settings.VAR_DIR) / f"demo-connections-worker-{run}.log"
        took = jobs.run_burst_worker("--queue", "default:1", log_path=log_path)
        self.stdout.write(f"   `manage.py runworker --burst` finished in {took:.1f}s")

    def _report(self, connection_id: int) -> None:
        connection = WorkConnection.objects.get(pk=connection_id)
        job = jobs.latest_job(job_types.SYNC_WORK_CONNECTION, connection_id=connection.pk)
        state = f"job #{job.pk} {job.status}: {job.progress_message or job.error}" if job else "no job"
        self.stdout.write(f"   workmanagement.sync {state}")
        for item in connection.items.order_by("external_id"):
            deleted = f"  (deleted {item.deleted_at:%H:%M:%S})" if item.deleted_at else ""
            self.stdout.write(f"     {item.external_id} {item.status:<12} {item.title}{deleted}")
