"""The product's triggers: connecting a repository, creating a workspace and the buttons on
the admin pages only enqueue, once per subject, in the transaction that asked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

import jobs
from jobs.models import Job, Workflow
from tests.support.providers import InMemoryCodeHost
from workspaces import models
from workspaces.providers import PullRequestData, use_code_host
from workspaces.services import triggers
from workspaces.services.pull_requests import sync_pull_requests

from .factories import OrganizationFactory, PullRequestFactory, RepositoryFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


def _button(obj, slug: str) -> str:
    return reverse(f"admin:workspaces_{obj._meta.model_name}_job_button", args=[obj.pk, slug])


def _errors(response) -> str:
    context = response.context
    return (
        f"{context['adminform'].form.errors} {[f.formset.errors for f in context['inline_admin_formsets']]}"
    )


def _change(obj) -> str:
    return reverse(f"admin:workspaces_{obj._meta.model_name}_change", args=[obj.pk])


@pytest.mark.parametrize(
    ("make", "slug", "job_type", "payload"),
    [
        (lambda: RepositoryFactory(), "reindex", "repository.ingest", lambda r: {"repository_id": r.pk}),
        (lambda: RepositoryFactory(), "sync", "pullrequest.sync", lambda r: {"repository_id": r.pk}),
    ],
    ids=["reindex", "sync-now"],
)
def test_button__pressed_twice_queues_one_job_and_links_to_it(admin_client, make, slug, job_type, payload):
    obj = make()
    for _ in range(2):
        response = admin_client.post(_button(obj, slug), follow=True)
    job = Job.objects.get(type=job_type)
    assert job.payload == payload(obj)
    assert response.redirect_chain[-1][0] == _change(obj)
    assert f'href="/admin/platform/job/{job.pk}/change/"' in response.content.decode()


def test_button__provision_pressed_twice_starts_one_workflow_and_links_to_it(admin_client):
    workspace = RepositoryFactory().workspace
    for _ in range(2):
        response = admin_client.post(_button(workspace, "provision"), follow=True)
    workflow = Workflow.objects.get()
    assert (workflow.name, workflow.dedupe_key) == ("workspace.provision", f"workspace:{workspace.pk}")
    assert response.redirect_chain[-1][0] == _change(workspace)
    assert f'href="/admin/platform/workflow/{workflow.pk}/change/"' in response.content.decode()
    assert list(Job.objects.values_list("type", flat=True)) == ["repository.ingest"]  # its first step


def _steps(workflow: Workflow) -> list[tuple[str, dict]]:
    return [(step.type, step.payload) for step in jobs.workflow_steps(workflow)]


def test_button__ask_for_a_test_plan_syncs_a_stale_pull_request_first_once_per_pull_request(admin_client):
    pull = PullRequestFactory()  # never synced
    other = PullRequestFactory(repository=pull.repository)
    for target in (pull, pull, other):
        response = admin_client.post(_button(target, "test-plan"), follow=True)
    workflows = list(Workflow.objects.order_by("id"))
    assert [(w.name, w.dedupe_key) for w in workflows] == [
        ("ai.test_plan", f"pull_request:{pull.pk}"),
        ("ai.test_plan", f"pull_request:{other.pk}"),
    ]
    assert f'href="/admin/platform/workflow/{workflows[1].pk}/change/"' in response.content.decode()
    repository = {"repository_id": pull.repository_id}
    ask = {
        "workflow": "test_plan",
        "workspace_id": pull.repository.workspace_id,
        "repository_id": pull.repository_id,
        "pull_request_id": pull.pk,
    }
    assert _steps(workflows[0]) == [
        ("pullrequest.sync", repository),
        ("checks.sync", repository),
        ("ai.workflow", ask),
    ]
    # The sync comes first; the second workflow's waits for the first one's, which holds the key.
    assert list(Job.objects.values_list("type", "step__workflow_id")) == [
        ("pullrequest.sync", workflows[0].pk)
    ]


def test_button__ask_for_a_test_plan_of_a_fresh_pull_request_asks_at_once(admin_client):
    pull = PullRequestFactory(synced_at=timezone.now())
    admin_client.post(_button(pull, "test-plan"))
    workflow = Workflow.objects.get()
    assert [type_name for type_name, _ in _steps(workflow)] == ["ai.workflow"]
    job = Job.objects.get()
    assert (job.type, job.queue, job.dedupe_key) == (
        "ai.workflow",
        "ai",
        f"workflow:test_plan:pull_request:{pull.pk}",
    )


def test_button__capsule_summary_is_offered_once_the_pull_request_has_a_capsule(admin_client):
    pull = PullRequestFactory(merged=True)
    assert "Capsule summary" not in admin_client.get(_change(pull)).content.decode()
    assert admin_client.post(_button(pull, "capsule-summary")).status_code == 403
    models.ReviewCapsule.objects.create(pull_request=pull, summary="s", data={})

    page = admin_client.get(_change(pull)).content.decode()
    admin_client.post(_button(pull, "capsule-summary"))

    assert "Capsule summary" in page and "Ask for a test plan" in page
    workflow = Workflow.objects.get()
    assert workflow.name == "ai.capsule_summary"
    assert _steps(workflow)[-1][1]["workflow"] == "capsule_summary"


def test_button__is_a_post_form_with_a_csrf_token_and_refuses_get(admin_client):
    repository = RepositoryFactory()
    page = admin_client.get(_change(repository)).content.decode()
    assert f'<form method="post" action="{_button(repository, "reindex")}"' in page
    assert "csrfmiddlewaretoken" in page
    assert admin_client.get(_button(repository, "reindex")).status_code == 405
    assert not Job.objects.exists()


def test_button__without_a_csrf_token_queues_nothing(admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post(_button(RepositoryFactory(), "reindex")).status_code == 403
    assert not Job.objects.exists()


def test_button__needs_the_change_permission_of_the_object():
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_repository"))
    client = Client()
    client.force_login(viewer)
    repository = RepositoryFactory()
    assert "Re-index" not in client.get(_change(repository)).content.decode()
    assert client.post(_button(repository, "reindex")).status_code == 403
    assert not Job.objects.exists()


def test_admin__connecting_a_repository_queues_its_ingest_and_stores_the_url_redacted(admin_client):
    workspace = WorkspaceFactory()
    response = admin_client.post(
        reverse("admin:workspaces_repository_add"),
        {
            "workspace": workspace.pk,
            "name": "api",
            "url": "https://ada:tok3n-secret@git.example/acme/api.git",
            "full_name": "",
            "local_path": "",
            "metadata": "{}",
        },
    )
    assert response.status_code == 302, _errors(response)
    repository = models.Repository.objects.get(name="api")
    assert repository.url == "https://***@git.example/acme/api.git"
    assert Job.objects.get(type="repository.ingest").payload == {"repository_id": repository.pk}
    assert "tok3n-secret" not in admin_client.get(_change(repository)).content.decode()


def test_admin__creating_a_workspace_with_a_repository_queues_its_provisioning(admin_client, settings):
    settings.REPOSITORY_LOCAL_ROOTS = ["/srv/git"]  # where an operator lets repositories be read from
    organization = OrganizationFactory()
    data = {
        "organization": organization.pk,
        "name": "Payments",
        "context": "{}",
        "repositories-TOTAL_FORMS": "1",
        "repositories-INITIAL_FORMS": "0",
        "repositories-0-name": "api",
        "repositories-0-url": "file:///srv/git/api.git",
    }
    response = admin_client.post(reverse("admin:workspaces_workspace_add"), data)
    assert response.status_code == 302, _errors(response)
    workspace = models.Workspace.objects.get(name="Payments")
    assert list(Workflow.objects.values_list("name", "dedupe_key")) == [
        ("workspace.provision", f"workspace:{workspace.pk}")
    ]
    repository = workspace.repositories.get()
    assert list(Job.objects.values_list("type", "payload")) == [
        ("repository.ingest", {"repository_id": repository.pk})
    ]

    # A repository added later to the workspace is ingested on its own.
    data.update(
        {
            "repositories-TOTAL_FORMS": "2",
            "repositories-INITIAL_FORMS": "1",
            "repositories-0-id": workspace.repositories.get().pk,
            "repositories-0-workspace": workspace.pk,
            "repositories-1-name": "web",
            "repositories-1-url": "file:///srv/git/web.git",
        }
    )
    assert admin_client.post(_change(workspace), data).status_code == 302
    web = models.Repository.objects.get(name="web")
    assert Job.objects.filter(type="repository.ingest", payload__repository_id=web.pk).count() == 1


def test_triggers__a_workspace_without_repositories_gets_no_job_and_rollback_leaves_none():
    workspace, job = triggers.create_workspace(OrganizationFactory(), name="Empty")
    assert job is None and not Job.objects.exists()
    with pytest.raises(RuntimeError), transaction.atomic():
        triggers.connect_repository(workspace, name="api", url="file:///srv/git/api.git")
        raise RuntimeError("the request failed after connecting")
    assert not Job.objects.exists() and not models.Repository.objects.exists()


def test_pull_request_sync__queues_checks_sync_when_pull_requests_are_supervised():
    repository = RepositoryFactory()
    host = InMemoryCodeHost(pulls={repository.pk: [PullRequestData(number=1, title="x")]})
    with use_code_host(host):
        sync_pull_requests(repository.pk)
        assert not Job.objects.filter(type="checks.sync").exists()
        models.PullRequest.objects.update(supervised=True)
        sync_pull_requests(repository.pk)
    assert Job.objects.get(type="checks.sync").payload == {"repository_id": repository.pk}
