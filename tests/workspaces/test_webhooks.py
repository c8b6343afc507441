"""The webhook endpoints through Django's test client: signed deliveries queue the job their
event calls for, forged ones are refused and queue nothing, replays and oversized bodies too."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.test import Client, RequestFactory
from django.utils import timezone

from jobs.models import Job, Status
from jobs.timers import run_timer
from tests.support import webhooks as hooks
from workspaces.models import WebhookDelivery
from workspaces.webhooks import deliveries
from workspaces.webhooks.github import GitHubHook, url_names
from workspaces.webhooks.receiver import receive

from .factories import PullRequestFactory, RepositoryFactory, WorkConnectionFactory

pytestmark = pytest.mark.django_db

GITHUB = "/webhooks/github/"
JIRA = "/webhooks/jira/"
CLICKUP = "/webhooks/clickup/"
MONDAY = "/webhooks/monday/"
MONDAY_AUDIENCE = "http://testserver/webhooks/monday/"
CLICKUP_SECRET_9 = "clickup-webhook-secret-of-webhook-nine"


@pytest.fixture(autouse=True)
def secrets(settings):
    settings.GITHUB_WEBHOOK_SECRET = [hooks.GITHUB_SECRET]
    settings.JIRA_WEBHOOK_SECRET = [hooks.JIRA_SECRET]
    settings.CLICKUP_WEBHOOK_SECRET = [
        "wh-0:another-clickup-webhook",
        f"wh-1:{hooks.CLICKUP_SECRET}",
        f"wh-9:{CLICKUP_SECRET_9}",
    ]
    settings.MONDAY_SIGNING_SECRET = [hooks.MONDAY_SECRET]
    settings.MONDAY_WEBHOOK_URL = ""
    settings.WEBHOOK_MAX_BODY_BYTES = 64 * 1024


@pytest.fixture
def repository():
    return RepositoryFactory(url="https://github.com/acme/api.git")


def _post(client: Client, url: str, body: bytes, headers: dict[str, str]):
    return client.post(url, data=body, content_type="application/json", headers=headers)


def _github(client: Client, payload: dict, event: str, **signing):
    body = hooks.body_of(payload)
    return _post(client, GITHUB, body, hooks.github_headers(body, event, **signing))


def _jobs(type_name: str) -> list[Job]:
    return list(Job.objects.filter(type=type_name).order_by("pk"))


# --- GitHub: verification --------------------------------------------------------------------


def test_github__a_signed_push_to_the_default_branch_queues_one_ingest(client, repository):
    response = _github(client, hooks.push("acme/api"), "push")

    assert response.status_code == 202
    (job,) = _jobs("repository.ingest")
    assert job.payload == {"repository_id": repository.pk} and job.status == Status.QUEUED
    assert response.json()["jobs"] == [{"id": job.pk, "type": "repository.ingest", "status": "queued"}]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.provider, delivery.event, delivery.outcome, delivery.job_ids) == (
        "github",
        "push",
        "queued",
        [job.pk],
    )


@pytest.mark.parametrize(
    "signature",
    [
        pytest.param(None, id="missing"),
        pytest.param("sha256=" + "0" * 64, id="zeros"),
        pytest.param("sha1=abc", id="other-scheme"),
        pytest.param(f"sha256={hooks.hex_hmac('not-the-secret', b'x')}", id="other-secret"),
    ],
)
def test_github__a_forged_or_missing_signature_gets_401_and_queues_and_records_nothing(
    client, repository, signature
):
    body = hooks.body_of(hooks.push("acme/api"))
    headers = hooks.github_headers(body, "push")
    if signature is None:
        del headers["X-Hub-Signature-256"]
    else:
        headers["X-Hub-Signature-256"] = signature

    response = _post(client, GITHUB, body, headers)

    assert response.status_code == 401
    assert not Job.objects.exists() and not WebhookDelivery.objects.exists()


def test_github__a_body_changed_after_signing_is_refused(client, repository):
    body = hooks.body_of(hooks.push("acme/api", ref="refs/heads/feature"))
    headers = hooks.github_headers(body, "push")
    tampered = body.replace(b"refs/heads/feature", b"refs/heads/main")

    assert _post(client, GITHUB, tampered, headers).status_code == 401
    assert not Job.objects.exists()


def test_github__a_delivery_signed_with_a_retiring_secret_is_accepted(client, settings, repository):
    settings.GITHUB_WEBHOOK_SECRET = ["the-new-secret", hooks.GITHUB_SECRET]
    assert _github(client, hooks.push("acme/api"), "push").status_code == 202
    assert len(_jobs("repository.ingest")) == 1


def test_github__with_no_secret_configured_every_delivery_is_refused(client, settings, repository):
    settings.GITHUB_WEBHOOK_SECRET = []
    assert _github(client, hooks.push("acme/api"), "push").status_code == 401
    assert not Job.objects.exists()


def test_github__a_signed_body_that_is_not_a_json_object_gets_400(client):
    for body in (b"{not json", b"[1, 2]"):
        response = _post(client, GITHUB, body, hooks.github_headers(body, "push"))
        assert response.status_code == 400
    assert not WebhookDelivery.objects.exists()


def test_webhooks__answer_only_post():
    client = Client()
    for url in (GITHUB, JIRA, CLICKUP, MONDAY):
        assert client.get(url).status_code == 405


# --- GitHub: each event to its job ----------------------------------------------------------


def test_github__ping_answers_200_and_queues_nothing(client):
    response = _github(client, {"zen": "Keep it simple.", "hook_id": 1}, "ping")
    assert response.status_code == 200
    assert not Job.objects.exists()
    assert WebhookDelivery.objects.get().outcome == "ignored"


def test_github__a_push_to_another_branch_is_acknowledged_and_queues_nothing(client, repository):
    response = _github(client, hooks.push("acme/api", ref="refs/heads/feature"), "push")
    assert response.status_code == 202 and response.json()["outcome"] == "ignored"
    assert "not to its default branch main" in response.json()["detail"]
    assert not Job.objects.exists()


def test_github__a_deleted_default_branch_queues_nothing(client, repository):
    payload = {**hooks.push("acme/api"), "deleted": True}
    assert _github(client, payload, "push").json()["outcome"] == "ignored"
    assert not Job.objects.exists()


def test_github__a_push_queues_an_ingest_for_every_workspace_that_connected_the_repository(
    client, repository
):
    ssh = RepositoryFactory(url="git@github.com:acme/api.git")
    RepositoryFactory(url="https://github.com/acme/api-docs.git")
    RepositoryFactory(url="https://gitlab.example.com/acme/api.git")

    _github(client, hooks.push("acme/api"), "push")

    queued = sorted(job.payload["repository_id"] for job in _jobs("repository.ingest"))
    assert queued == sorted([repository.pk, ssh.pk])


def test_github__a_repository_fetched_from_a_mirror_is_found_by_its_full_name(client):
    mirrored = RepositoryFactory(url="file:///srv/mirrors/api.git", full_name="acme/api")
    RepositoryFactory(url="https://gitlab.example.com/acme/api.git", full_name="acme/api")  # another host

    _github(client, hooks.push("acme/api"), "push")

    assert [job.payload["repository_id"] for job in _jobs("repository.ingest")] == [mirrored.pk]


def test_github__pull_request_queues_a_pull_request_sync(client, repository):
    payload = {
        "action": "synchronize",
        "number": 7,
        "pull_request": {"number": 7},
        "repository": hooks.repository(),
    }
    response = _github(client, payload, "pull_request")

    assert response.status_code == 202
    (job,) = _jobs("pullrequest.sync")
    assert job.payload == {"repository_id": repository.pk}


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("check_run", {"check_run": {"head_sha": "f" * 40, "pull_requests": [{"number": 7}]}}),
        ("check_suite", {"check_suite": {"head_sha": "f" * 40, "pull_requests": [{"number": 7}]}}),
        ("pull_request_review", {"review": {"state": "approved"}, "pull_request": {"number": 7}}),
        # A fork's pull request is not listed on its check runs: the head commit names it.
        ("check_run", {"check_run": {"head_sha": "a" * 40, "pull_requests": []}}),
    ],
    ids=["check_run", "check_suite", "pull_request_review", "check_run-from-a-fork"],
)
def test_github__checks_and_reviews_of_a_supervised_pull_request_queue_a_checks_sync(
    client, repository, event, payload
):
    PullRequestFactory(repository=repository, number=7, supervised=True, head_sha="a" * 40)

    response = _github(client, {**payload, "repository": hooks.repository()}, event)

    assert response.status_code == 202
    (job,) = _jobs("checks.sync")
    assert job.payload == {"repository_id": repository.pk}


def test_github__checks_of_an_unsupervised_pull_request_queue_nothing(client, repository):
    PullRequestFactory(repository=repository, number=7, supervised=False)
    payload = {
        "check_run": {"head_sha": "f" * 40, "pull_requests": [{"number": 7}]},
        "repository": hooks.repository(),
    }

    response = _github(client, payload, "check_run")

    assert response.json()["outcome"] == "ignored"
    assert not Job.objects.exists()


def test_github__other_events_are_acknowledged_and_ignored(client, repository):
    response = _github(client, {"action": "created", "repository": hooks.repository()}, "star")
    assert response.status_code == 202 and response.json()["outcome"] == "ignored"
    assert not Job.objects.exists()


def test_github__an_unknown_repository_gets_202_and_nothing_else(client, repository):
    response = _github(client, hooks.push("acme/other"), "push")

    assert response.status_code == 202 and response.json()["outcome"] == "unknown"
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("https://github.com/Acme/API.git", ("github.com", "acme/api")),
        ("https://***@github.com/acme/api", ("github.com", "acme/api")),
        ("ssh://git@ghe.example.com:2222/acme/api.git", ("ghe.example.com", "acme/api")),
        ("git@github.com:acme/api.git", ("github.com", "acme/api")),
        ("file:///srv/git/acme/api.git", ("", "")),
        ("https://github.com/acme", ("", "")),
    ],
)
def test_url_names__reads_host_and_owner_name_from_each_url_form(url, names):
    assert url_names(url) == names


# --- every endpoint: replays, sizes, CSRF ---------------------------------------------------


def test_github__the_same_delivery_id_twice_queues_nothing_new(client, repository):
    body = hooks.body_of(hooks.push("acme/api"))
    headers = hooks.github_headers(body, "push", delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert _post(client, GITHUB, body, headers).status_code == 202
    # The first ingest finished, so only the delivery id can keep a second one out.
    Job.objects.update(status=Status.SUCCEEDED)

    again = _post(client, GITHUB, body, headers)

    assert again.status_code == 200 and again.json()["outcome"] == "repeat"
    assert len(_jobs("repository.ingest")) == 1
    delivery = WebhookDelivery.objects.get()
    assert delivery.repeats == 1


def test_github__a_second_delivery_while_the_ingest_is_queued_gets_that_same_job(client, repository):
    first = _github(client, hooks.push("acme/api"), "push").json()["jobs"]
    second = _github(client, hooks.push("acme/api"), "push").json()["jobs"]

    assert first == second and len(_jobs("repository.ingest")) == 1
    assert WebhookDelivery.objects.count() == 2


def test_webhooks__a_body_over_the_limit_gets_413_and_queues_nothing(client, settings, repository):
    settings.WEBHOOK_MAX_BODY_BYTES = 2048
    payload = {**hooks.push("acme/api"), "padding": "x" * 4096}

    response = _github(client, payload, "push")

    assert response.status_code == 413
    assert not Job.objects.exists() and not WebhookDelivery.objects.exists()


class CountingStream(io.BytesIO):
    """A request body that counts what the view read of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.read_bytes += len(chunk)
        return chunk


def test_webhooks__an_oversized_content_length_is_refused_before_the_body_is_read(settings):
    settings.WEBHOOK_MAX_BODY_BYTES = 1024
    stream = CountingStream(b"x" * 10_000)
    request = RequestFactory().generic(
        "POST", GITHUB, content_type="application/json", CONTENT_LENGTH="10000", **{"wsgi.input": stream}
    )

    response = receive(request, GitHubHook())

    assert response.status_code == 413
    assert stream.read_bytes == 0


def test_webhooks__only_the_webhook_views_are_exempt_from_csrf(repository):
    client = Client(enforce_csrf_checks=True)
    body = hooks.body_of(hooks.push("acme/api"))

    assert _post(client, GITHUB, body, hooks.github_headers(body, "push")).status_code == 202
    assert client.post("/admin/login/", {"username": "x", "password": "y"}).status_code == 403


# --- Jira ------------------------------------------------------------------------------------


def _jira(client: Client, payload: dict, **signing):
    body = hooks.body_of(payload)
    return _post(client, JIRA, body, hooks.jira_headers(body, **signing))


def test_jira__a_signed_issue_event_queues_a_sync_of_the_projects_connection(client):
    connection = WorkConnectionFactory(kind="jira", external_id="PAY", api_url="https://acme.atlassian.net")
    WorkConnectionFactory(kind="jira", external_id="OPS")

    response = _jira(client, hooks.jira_issue("jira:issue_created", project="PAY"))

    assert response.status_code == 202
    (job,) = _jobs("workmanagement.sync")
    assert job.payload == {"connection_id": connection.pk}


def test_jira__a_forged_delivery_is_refused(client):
    WorkConnectionFactory(kind="jira", external_id="PAY")
    response = _jira(client, hooks.jira_issue(), secret="guessed")
    assert response.status_code == 401
    assert not Job.objects.exists()


def test_jira__a_deleted_issue_asks_the_sync_for_a_full_listing(client):
    connection = WorkConnectionFactory(kind="jira", external_id="PAY", full_synced_at=timezone.now())

    _jira(client, hooks.jira_issue("jira:issue_deleted", project="PAY"))

    connection.refresh_from_db()
    assert connection.full_synced_at is None
    assert len(_jobs("workmanagement.sync")) == 1


def test_jira__an_unknown_project_another_site_or_an_inactive_connection_get_202_and_nothing_else(client):
    WorkConnectionFactory(kind="jira", external_id="PAY", api_url="https://other.atlassian.net")
    WorkConnectionFactory(kind="jira", external_id="OPS", active=False)

    for project in ("PAY", "OPS", "NEW"):
        response = _jira(client, hooks.jira_issue(project=project))
        assert response.status_code == 202 and response.json()["outcome"] == "unknown"
    assert not Job.objects.exists()


def test_jira__events_that_are_not_about_issues_need_no_sync(client):
    WorkConnectionFactory(kind="jira", external_id="PAY")
    response = _jira(client, {"webhookEvent": "sprint_started", "sprint": {"id": 1}})
    assert response.json()["outcome"] == "ignored"
    assert not Job.objects.exists()


def test_jira__a_replayed_delivery_queues_nothing_new(client):
    WorkConnectionFactory(kind="jira", external_id="PAY")
    body = hooks.body_of(hooks.jira_issue())
    headers = hooks.jira_headers(body, delivery="jira-delivery-1")
    _post(client, JIRA, body, headers)
    Job.objects.update(status=Status.SUCCEEDED)

    assert _post(client, JIRA, body, headers).json()["outcome"] == "repeat"
    assert len(_jobs("workmanagement.sync")) == 1


# --- ClickUp ---------------------------------------------------------------------------------


def _clickup(client: Client, payload: dict, **signing):
    body = hooks.body_of(payload)
    return _post(client, CLICKUP, body, hooks.clickup_headers(body, **signing))


def test_clickup__a_signed_task_event_queues_a_sync_of_the_webhooks_connection(client):
    connection = WorkConnectionFactory(kind="clickup", external_id="900100", webhook_id="wh-1")

    response = _clickup(client, hooks.clickup_task("taskStatusUpdated", webhook_id="wh-1"))

    assert response.status_code == 202
    (job,) = _jobs("workmanagement.sync")
    assert job.payload == {"connection_id": connection.pk}


def test_clickup__a_forged_delivery_is_refused(client):
    WorkConnectionFactory(kind="clickup", webhook_id="wh-1")
    assert _clickup(client, hooks.clickup_task(), secret="guessed").status_code == 401
    assert not Job.objects.exists()


def test_clickup__a_deleted_task_asks_for_a_full_listing_and_an_unknown_webhook_gets_202(client):
    connection = WorkConnectionFactory(kind="clickup", webhook_id="wh-1", full_synced_at=timezone.now())

    assert _clickup(client, hooks.clickup_task("taskDeleted", webhook_id="wh-1")).status_code == 202
    unknown = _clickup(client, hooks.clickup_task(webhook_id="wh-9"), secret=CLICKUP_SECRET_9)

    connection.refresh_from_db()
    assert connection.full_synced_at is None
    assert unknown.status_code == 202 and unknown.json()["outcome"] == "unknown"
    assert len(_jobs("workmanagement.sync")) == 1


def test_clickup__the_same_body_twice_is_one_delivery(client):
    WorkConnectionFactory(kind="clickup", webhook_id="wh-1")
    payload = hooks.clickup_task(webhook_id="wh-1")
    _clickup(client, payload)
    Job.objects.update(status=Status.SUCCEEDED)

    assert _clickup(client, payload).json()["outcome"] == "repeat"
    assert len(_jobs("workmanagement.sync")) == 1


# --- Monday ----------------------------------------------------------------------------------


def _monday(client: Client, payload: dict, **signing):
    signing.setdefault("audience", MONDAY_AUDIENCE)
    return _post(client, MONDAY, hooks.body_of(payload), hooks.monday_headers(**signing))


def test_monday__the_challenge_is_echoed_and_nothing_is_recorded_or_queued(client):
    response = _post(
        client, MONDAY, b'{"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}', {}
    )

    assert response.status_code == 200
    assert response.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
    assert not WebhookDelivery.objects.exists() and not Job.objects.exists()


def test_monday__an_event_with_a_valid_jwt_queues_a_sync_of_the_boards_connection(client):
    connection = WorkConnectionFactory(kind="monday", external_id="1234567890")

    response = _monday(client, hooks.monday_event("create_pulse", board=1234567890))

    assert response.status_code == 202
    (job,) = _jobs("workmanagement.sync")
    assert job.payload == {"connection_id": connection.pk}


@pytest.mark.parametrize(
    "signing",
    [
        pytest.param({"secret": "another-apps-signing-secret-0123456789abcdef0123456789"}, id="other-secret"),
        pytest.param({"expires_in": -600}, id="expired"),
        pytest.param({"audience": "https://elsewhere.example.com/hook"}, id="other-audience"),
        pytest.param({"algorithm": "HS512"}, id="other-algorithm"),
    ],
)
def test_monday__an_event_whose_jwt_does_not_verify_is_refused(client, signing):
    WorkConnectionFactory(kind="monday", external_id="1234567890")
    assert _monday(client, hooks.monday_event(), **signing).status_code == 401
    assert not Job.objects.exists()


def test_monday__an_unsigned_or_none_algorithm_event_is_refused(client):
    WorkConnectionFactory(kind="monday", external_id="1234567890")
    body = hooks.body_of(hooks.monday_event())
    unsigned = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + (
        __import__("base64")
        .urlsafe_b64encode(json.dumps({"aud": MONDAY_AUDIENCE, "exp": 9999999999}).encode())
        .decode()
        .rstrip("=")
        + "."
    )
    assert _post(client, MONDAY, body, {}).status_code == 401
    assert _post(client, MONDAY, body, {"Authorization": unsigned}).status_code == 401
    assert not Job.objects.exists()


def test_monday__the_audience_can_be_set_for_a_proxy(client, settings):
    settings.MONDAY_WEBHOOK_URL = "https://platform.example.com/webhooks/monday/"
    WorkConnectionFactory(kind="monday", external_id="1234567890")
    assert _monday(client, hooks.monday_event(), audience=MONDAY_AUDIENCE).status_code == 401
    assert _monday(client, hooks.monday_event(), audience=settings.MONDAY_WEBHOOK_URL).status_code == 202


def test_monday__a_deleted_item_asks_for_a_full_listing_and_a_replay_queues_nothing(client):
    connection = WorkConnectionFactory(kind="monday", external_id="55", full_synced_at=timezone.now())
    payload = hooks.monday_event("delete_pulse", board=55, trigger="trigger-1")

    assert _monday(client, payload).status_code == 202
    Job.objects.update(status=Status.SUCCEEDED)
    assert _monday(client, payload).json()["outcome"] == "repeat"

    connection.refresh_from_db()
    assert connection.full_synced_at is None
    assert len(_jobs("workmanagement.sync")) == 1


def test_monday__an_unknown_board_gets_202_and_nothing_else(client):
    response = _monday(client, hooks.monday_event(board=404))
    assert response.status_code == 202 and response.json()["outcome"] == "unknown"
    assert not Job.objects.exists()


# --- deliveries are kept, then pruned --------------------------------------------------------


def test_deliveries__are_pruned_after_the_retention_by_the_sweep(settings):
    settings.WEBHOOK_DELIVERIES_KEEP_DAYS = 14
    old = WebhookDelivery.objects.create(provider="github", delivery_id="old", outcome="ignored")
    WebhookDelivery.objects.filter(pk=old.pk).update(received_at=timezone.now() - timedelta(days=15))
    kept = WebhookDelivery.objects.create(provider="github", delivery_id="new", outcome="ignored")

    results = run_timer("sweep")

    assert results["workspaces.tasks.prune_webhook_deliveries"] == "1 webhook deliveries pruned"
    assert list(WebhookDelivery.objects.values_list("pk", flat=True)) == [kept.pk]
    assert deliveries.prune() == 0
