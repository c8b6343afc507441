"""The workspace admin: every page opens, and the actions queue the on-demand jobs."""

from __future__ import annotations

import pytest
from django.urls import reverse

from jobs.models import Job
from workspaces import models
from workspaces.services.reconcile import enqueue_due_syncs

from .factories import AIArtifactFactory, PullRequestFactory, RepositoryFactory, WorkConnectionFactory

pytestmark = pytest.mark.django_db

MODELS = [
    models.Organization,
    models.TrialReminder,
    models.Workspace,
    models.Repository,
    models.PullRequest,
    models.WorkConnection,
    models.SourceItem,
    models.WebhookDelivery,
    models.AIArtifact,
    models.Decision,
    models.ReviewCapsule,
]


def _url(model, view: str, *args) -> str:
    return reverse(f"admin:workspaces_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_admin__changelist_opens(admin_client, model):
    PullRequestFactory()
    AIArtifactFactory()
    WorkConnectionFactory()
    assert admin_client.get(_url(model, "changelist")).status_code == 200


def test_admin__repository_page_opens(admin_client):
    repository = RepositoryFactory(ingested=True)
    assert admin_client.get(_url(models.Repository, "change", repository.pk)).status_code == 200


def test_admin__reindex_action_queues_one_ingest_per_repository(admin_client):
    repository = RepositoryFactory()
    data = {"action": "reindex", "_selected_action": [repository.pk]}
    for _ in range(2):
        admin_client.post(_url(models.Repository, "changelist"), data)
    job = Job.objects.get(type="repository.ingest")
    assert (job.queue, job.payload) == ("ingestion", {"repository_id": repository.pk})


def test_admin__sync_now_uses_the_same_dedupe_key_as_reconcile(admin_client):
    connection = WorkConnectionFactory()
    admin_client.post(
        _url(models.WorkConnection, "changelist"), {"action": "sync_now", "_selected_action": [connection.pk]}
    )
    assert Job.objects.get(type="workmanagement.sync").dedupe_key == f"connection:{connection.pk}"
    # Reconcile sees that sync as the connection's and adds no twin.
    assert enqueue_due_syncs() == 0
    assert Job.objects.filter(type="workmanagement.sync").count() == 1
