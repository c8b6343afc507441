"""Deliveries shaped as the providers' published examples send them: GitHub's ``status``
event (a CI on the Statuses API), a Jira issue moved to another project, monday's
``move_subitem`` (no ``boardId``, a source and a destination board)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from jobs.models import Job
from tests.support import webhooks as hooks
from tests.support.providers import InMemoryTracker
from workspaces.models import SourceItem, WebhookDelivery
from workspaces.providers import WorkItemData, use_work_tracker
from workspaces.services.work_items import sync_connection

from .factories import PullRequestFactory, RepositoryFactory, WorkConnectionFactory

pytestmark = pytest.mark.django_db

HEAD = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"


@pytest.fixture(autouse=True)
def secrets(settings):
    settings.GITHUB_WEBHOOK_SECRET = [hooks.GITHUB_SECRET]
    settings.JIRA_WEBHOOK_SECRET = [hooks.JIRA_SECRET]
    settings.MONDAY_SIGNING_SECRET = [hooks.MONDAY_SECRET]
    settings.MONDAY_WEBHOOK_URL = ""


def _post(url: str, body: bytes, headers: dict[str, str]):
    return Client().post(url, data=body, content_type="application/json", headers=headers)


# --- GitHub: status ----------------------------------------------------------------------------


def github_status(sha: str = HEAD, state: str = "success") -> dict:
    """GitHub's ``status`` webhook payload (docs: webhook events and payloads, ``status``)."""
    return {
        "id": 6805126730,
        "sha": sha,
        "name": "acme/api",
        "target_url": "https://ci.example.com/builds/42",
        "avatar_url": None,
        "context": "ci/build",
        "description": "The build passed",
        "state": state,
        "commit": {"sha": sha, "commit": {"message": "Fix the build"}},
        "branches": [{"name": "feature", "commit": {"sha": sha}, "protected": False}],
        "created_at": "2026-03-01T10:00:00Z",
        "updated_at": "2026-03-01T10:00:00Z",
        "repository": hooks.repository("acme/api"),
        "sender": {"login": "ci-bot", "type": "Bot"},
    }


def _status(payload: dict):
    body = hooks.body_of(payload)
    return _post("/webhooks/github/", body, hooks.github_headers(body, "status"))


def test_github__a_status_on_a_supervised_pull_requests_head_queues_checks_sync():
    repository = RepositoryFactory(url="https://github.com/acme/api.git")
    PullRequestFactory(repository=repository, number=7, supervised=True, head_sha=HEAD)

    response = _status(github_status())

    assert response.status_code == 202
    (job,) = Job.objects.filter(type="checks.sync")
    assert job.payload == {"repository_id": repository.pk}
    assert WebhookDelivery.objects.get().event == "status"


def test_github__a_status_of_a_commit_no_supervised_pull_request_has_is_ignored():
    repository = RepositoryFactory(url="https://github.com/acme/api.git")
    PullRequestFactory(repository=repository, number=7, supervised=False, head_sha=HEAD)
    PullRequestFactory(repository=repository, number=8, supervised=True, head_sha="a" * 40)

    response = _status(github_status())

    assert response.status_code == 202 and response.json()["outcome"] == "ignored"
    assert not Job.objects.exists()


# --- Jira: an issue moved between projects ----------------------------------------------------


def jira_moved(old_key: str = "PAY-7", new_key: str = "OPS-12") -> dict:
    """``jira:issue_updated`` for an issue moved from PAY (id 10000) to OPS (id 10001), with
    the changelog Jira Cloud sends for a move."""
    payload = hooks.jira_issue("jira:issue_updated", project="OPS")
    payload["issue"]["key"] = new_key
    payload["issue"]["fields"]["project"] = {"id": "10001", "key": "OPS", "name": "Operations"}
    payload["issue_event_type_name"] = "issue_moved"
    payload["changelog"] = {
        "id": "10142",
        "items": [
            {
                "field": "project",
                "fieldtype": "jira",
                "fieldId": "project",
                "from": "10000",
                "fromString": "Payments",
                "to": "10001",
                "toString": "Operations",
            },
            {
                "field": "Key",
                "fieldtype": "jira",
                "from": None,
                "fromString": old_key,
                "to": None,
                "toString": new_key,
            },
        ],
    }
    return payload


def test_jira__an_issue_moved_away_leaves_the_old_projects_mirror_on_the_delivery():
    old = WorkConnectionFactory(kind="jira", external_id="PAY", full_synced_at=timezone.now())
    new = WorkConnectionFactory(kind="jira", external_id="OPS", full_synced_at=timezone.now())
    SourceItem.objects.create(connection=old, external_id="PAY-7", title="Refunds")
    body = hooks.body_of(jira_moved())

    response = _post("/webhooks/jira/", body, hooks.jira_headers(body))

    assert response.status_code == 202
    queued = sorted(job.payload["connection_id"] for job in Job.objects.filter(type="workmanagement.sync"))
    assert queued == sorted([old.pk, new.pk])
    old.refresh_from_db()
    assert old.full_synced_at is None  # its sync lists everything, so it finds PAY-7 gone
    assert "moved from PAY" in WebhookDelivery.objects.get().detail
    # The old project's sync that the delivery queued takes the issue out of its mirror.
    tracker = InMemoryTracker(boards={old.pk: [WorkItemData("PAY-8", "Payouts")]})
    with use_work_tracker("jira", tracker):
        sync_connection(old.pk)
    assert set(old.items.filter(deleted_at__isnull=True).values_list("external_id", flat=True)) == {"PAY-8"}


def test_jira__an_update_without_a_move_syncs_only_its_own_project():
    WorkConnectionFactory(kind="jira", external_id="PAY")
    ops = WorkConnectionFactory(kind="jira", external_id="OPS")
    body = hooks.body_of(hooks.jira_issue("jira:issue_updated", project="OPS"))

    _post("/webhooks/jira/", body, hooks.jira_headers(body))

    assert [job.payload for job in Job.objects.all()] == [{"connection_id": ops.pk}]


# --- Monday: move_subitem ----------------------------------------------------------------------


def monday_move_subitem() -> dict:
    """monday's ``move_subitem`` event: the subitem's boards, no ``boardId``."""
    return {
        "event": {
            "app": "monday",
            "type": "move_subitem",
            "triggerTime": "2026-03-01T10:00:00.000Z",
            "subscriptionId": 73759690,
            "userId": 4012689,
            "originalTriggerUuid": None,
            "sourceBoardId": 1111111111,
            "destBoardId": 2222222222,
            "pulseId": 3333333333,
            "parentItemId": "4444444444",
            "sourceGroupId": "topics",
            "destGroupId": "new_group",
            "triggerUuid": "e2b8c37e6e9f4b6ea9b0d9a1b1c6a3f0",
        }
    }


def test_monday__move_subitem_syncs_both_boards_and_lists_the_one_it_left_in_full():
    source = WorkConnectionFactory(kind="monday", external_id="1111111111", full_synced_at=timezone.now())
    destination = WorkConnectionFactory(kind="monday", external_id="2222222222")
    body = hooks.body_of(monday_move_subitem())

    response = _post("/webhooks/monday/", body, hooks.monday_headers("http://testserver/webhooks/monday/"))

    assert response.status_code == 202
    queued = sorted(job.payload["connection_id"] for job in Job.objects.all())
    assert queued == sorted([source.pk, destination.pk])
    source.refresh_from_db()
    assert source.full_synced_at is None
    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == "queued" and "?" not in delivery.detail
    assert "1111111111" in delivery.detail
