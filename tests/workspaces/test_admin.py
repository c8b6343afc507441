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


# --- what the system writes is read-only ---------------------------------------------------------


def _system_written_rows():
    from datetime import timedelta

    from django.utils import timezone

    pull = PullRequestFactory(merged=True)
    connection = WorkConnectionFactory(workspace=pull.repository.workspace)
    return {
        models.TrialReminder: models.TrialReminder.objects.create(
            organization=pull.repository.workspace.organization,
            trial_ends_at=timezone.now() + timedelta(days=2),
            email="billing@example.com",
        ),
        models.AIArtifact: AIArtifactFactory(workspace=pull.repository.workspace),
        models.ReviewCapsule: models.ReviewCapsule.objects.create(pull_request=pull, summary="What changed."),
        models.SourceItem: models.SourceItem.objects.create(
            connection=connection, external_id="PROJ-1", title="Ship it"
        ),
    }


def test_system_written_models__can_be_neither_added_nor_edited_by_hand(admin_client):
    for model, row in _system_written_rows().items():
        name = model._meta.model_name
        assert admin_client.get(_url(model, "add")).status_code == 403, name
        assert admin_client.post(_url(model, "add"), {}).status_code == 403, name
        page = admin_client.get(_url(model, "change", row.pk))
        assert page.status_code == 200, name
        assert page.context["has_change_permission"] is False and 'name="_save"' not in page.text, name
        assert admin_client.post(_url(model, "change", row.pk), {}).status_code == 403, name


def test_trial_reminder__an_empty_add_form_is_no_longer_a_server_error(admin_client):
    # It used to be offered with every field read-only, and saving it failed on trial_ends_at.
    assert admin_client.post(_url(models.TrialReminder, "add"), {}).status_code == 403
    assert "trialreminder/add/" not in admin_client.get(reverse("admin:index")).text


def test_ai_artifact__is_deleted_only_once_retention_has_blanked_its_bodies(admin_client):
    from django.utils import timezone

    artifact = AIArtifactFactory()
    assert (
        admin_client.post(_url(models.AIArtifact, "delete", artifact.pk), {"post": "yes"}).status_code == 403
    )
    models.AIArtifact.objects.filter(pk=artifact.pk).update(
        prompt="", output="", bodies_purged_at=timezone.now()
    )
    admin_client.post(_url(models.AIArtifact, "delete", artifact.pk), {"post": "yes"})
    assert not models.AIArtifact.objects.filter(pk=artifact.pk).exists()


def test_pull_request__only_supervised_is_the_operators(admin_client):
    pull = PullRequestFactory(title="From the host")
    assert admin_client.get(_url(models.PullRequest, "add")).status_code == 403
    form = admin_client.get(_url(models.PullRequest, "change", pull.pk)).context["adminform"].form
    assert list(form.fields) == ["supervised"]
    admin_client.post(_url(models.PullRequest, "change", pull.pk), {"supervised": "on", "title": "Typed in"})
    pull.refresh_from_db()
    assert (pull.supervised, pull.title) == (True, "From the host")


@pytest.mark.parametrize(
    "make",
    [
        lambda: RepositoryFactory(ingested=True).workspace.organization,
        lambda: RepositoryFactory(ingested=True).workspace,
        lambda: RepositoryFactory(ingested=True),
        lambda: WorkConnectionFactory(),
    ],
    ids=["organization", "workspace", "repository", "connection"],
)
def test_record_forms__offer_no_created_at_and_no_ingest_result_to_type_in(admin_client, make):
    obj = make()
    form = admin_client.get(_url(type(obj), "change", obj.pk)).context["adminform"].form
    written = {
        "created_at",
        "status",
        "languages",
        "findings",
        "paths",
        "host_state",
        "file_count",
        "summary",
    }
    assert written.isdisjoint(form.fields)


def test_repository_page__findings_and_languages_are_tables_and_secrets_stand_out(admin_client):
    repository = RepositoryFactory(
        ingested=True,
        findings=[
            {"rule": "debt.markers", "path": "app/models.py", "message": "1 TODO/FIXME markers."},
            {"rule": "secrets.aws-key", "path": "config/prod.py", "message": "An AWS access key id appears."},
        ],
        languages={"Python": 4, "JavaScript": 1},
    )
    page = admin_client.get(_url(models.Repository, "change", repository.pk)).text
    assert "1 secret-like finding: review them first." in page
    secret = page.index('<tr class="ws-secret"><td class="ws-rule">secrets.aws-key</td>')
    assert secret < page.index("debt.markers")  # secrets first
    assert "<tr><td>Python</td><td>4</td></tr><tr><td>JavaScript</td><td>1</td></tr>" in page
    assert '{"rule"' not in page and "[{&quot;rule" not in page


# --- buttons on the records' own pages ------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "slug", "job_type", "key"),
    [
        (lambda: RepositoryFactory(), "analyse", "repository.analyse", "repository_id"),
        (lambda: RepositoryFactory().workspace.organization, "purge", "retention.purge", "organization_id"),
    ],
    ids=["analyse", "purge"],
)
def test_button__queues_its_job_once_and_links_to_it(admin_client, make, slug, job_type, key):
    obj = make()
    button = reverse(f"admin:workspaces_{obj._meta.model_name}_job_button", args=[obj.pk, slug])
    assert f'action="{button}"' in admin_client.get(_url(type(obj), "change", obj.pk)).text
    for _ in range(2):
        response = admin_client.post(button, follow=True)
    job = Job.objects.get(type=job_type)
    assert job.payload == {key: obj.pk}
    assert (
        f'<a href="/admin/platform/job/{job.pk}/change/">{job_type} job #{job.pk}</a> is queued.'
        in response.text
    )


def test_decision__is_accepted_or_rejected_on_its_page_once(admin_client):
    from django.contrib.admin.models import LogEntry

    workspace = RepositoryFactory().workspace
    decision = models.Decision.objects.create(
        workspace=workspace, title="Use Stripe", source="pr:2", fingerprint="a"
    )
    page = admin_client.get(_url(models.Decision, "change", decision.pk)).text
    assert "Accept" in page and "Reject" in page and 'name="_save"' not in page
    assert admin_client.get(_url(models.Decision, "add")).status_code == 403

    accept = reverse("admin:workspaces_decision_job_button", args=[decision.pk, "accept"])
    response = admin_client.post(accept, follow=True)
    assert "“Use Stripe” is accepted." in response.text
    assert models.Decision.objects.get(pk=decision.pk).status == "accepted"
    assert "job-button" not in response.text  # answered: no more buttons
    assert admin_client.post(accept).status_code == 403
    assert (
        LogEntry.objects.get(object_id=str(decision.pk)).get_change_message()
        == "Accept: “Use Stripe” is accepted."
    )


def test_decision__a_second_answer_at_the_same_time_is_refused_with_a_message(admin_client):
    from workspaces.services import decisions

    decision = models.Decision.objects.create(
        workspace=RepositoryFactory().workspace, title="Use Stripe", source="pr:2", fingerprint="a"
    )
    stale = models.Decision.objects.get(pk=decision.pk)
    decisions.reject(decision)
    with pytest.raises(Exception, match="no longer proposed: it is rejected"):
        decisions.accept(stale)
    assert models.Decision.objects.get(pk=decision.pk).status == "rejected"


@pytest.mark.parametrize(
    ("model", "make", "job_type", "key"),
    [
        (
            models.Organization,
            lambda: RepositoryFactory().workspace.organization,
            "retention.purge",
            "organization_id",
        ),
        (models.Workspace, lambda: RepositoryFactory().workspace, "workspace.provision", "workspace_id"),
        (models.WorkConnection, lambda: WorkConnectionFactory(), "workmanagement.sync", "connection_id"),
    ],
    ids=["organization", "workspace", "connection"],
)
def test_record__page_shows_its_recent_jobs_and_list_its_last_job(admin_client, model, make, job_type, key):
    import jobs

    obj = make()
    job = jobs.enqueue(job_type, {key: obj.pk})
    page = admin_client.get(_url(model, "change", obj.pk)).text
    assert 'id="recent-jobs"' in page and f'href="/admin/platform/job/{job.pk}/change/"' in page
    listing = admin_client.get(_url(model, "changelist")).text
    assert f'<a href="/admin/platform/job/{job.pk}/change/"' in listing and "job-status--queued" in listing


def test_list_action__its_message_links_the_jobs_it_queued(admin_client):
    repositories = [RepositoryFactory() for _ in range(7)]
    url = _url(models.Repository, "changelist")

    few = admin_client.post(url, {"action": "analyse", "_selected_action": [repositories[0].pk]}, follow=True)
    job = Job.objects.get(type="repository.analyse")
    assert (
        f'Queued 1 repository.analyse job(s): <a href="/admin/platform/job/{job.pk}/change/">#{job.pk}</a>.'
        in few.text
    )

    many = admin_client.post(
        url, {"action": "reindex", "_selected_action": [r.pk for r in repositories]}, follow=True
    )
    assert 'Queued 7 <a href="/admin/platform/job/?type=repository.ingest&amp;status=queued">' in many.text
