"""The webhook endpoints behind a real HTTP server (Django's live server), posted to with a
plain HTTP client as the providers post: signed, forged, replayed, oversized."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from jobs.models import Job, Status
from tests.support import webhooks as hooks
from workspaces.models import WebhookDelivery

from .factories import RepositoryFactory, WorkConnectionFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def secrets(settings):
    settings.GITHUB_WEBHOOK_SECRET = [hooks.GITHUB_SECRET]
    settings.JIRA_WEBHOOK_SECRET = [hooks.JIRA_SECRET]
    settings.CLICKUP_WEBHOOK_SECRET = [f"wh-1:{hooks.CLICKUP_SECRET}"]
    settings.MONDAY_SIGNING_SECRET = [hooks.MONDAY_SECRET]
    settings.MONDAY_WEBHOOK_URL = ""
    settings.WEBHOOK_MAX_BODY_BYTES = 4096


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_github_over_http__signed_is_queued_forged_refused_replay_and_oversized_queue_nothing(live_server):
    repository = RepositoryFactory(url="https://github.com/acme/api.git")
    url = f"{live_server.url}/webhooks/github/"
    body = hooks.body_of(hooks.push("acme/api"))
    headers = hooks.github_headers(body, "push", delivery="a1b2c3")

    forged = post(url, body, {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64})
    signed = post(url, body, headers)
    Job.objects.update(status=Status.SUCCEEDED)
    replayed = post(url, body, headers)
    big = hooks.body_of({**hooks.push("acme/api"), "padding": "x" * 8192})
    oversized = post(url, big, hooks.github_headers(big, "push"))
    ping = post(
        url,
        b'{"zen": "Design for failure."}',
        hooks.github_headers(b'{"zen": "Design for failure."}', "ping"),
    )

    assert forged[0] == 401
    assert signed[0] == 202 and signed[1]["outcome"] == "queued"
    assert replayed[0] == 200 and replayed[1]["outcome"] == "repeat"
    assert oversized[0] == 413
    assert ping[0] == 200
    (job,) = Job.objects.filter(type="repository.ingest")
    assert job.payload == {"repository_id": repository.pk}
    assert WebhookDelivery.objects.get(delivery_id="a1b2c3").repeats == 1


def test_trackers_over_http__each_endpoint_verifies_its_own_way_and_queues_a_sync(live_server):
    jira = WorkConnectionFactory(kind="jira", external_id="PAY")
    clickup = WorkConnectionFactory(kind="clickup", webhook_id="wh-1")
    monday = WorkConnectionFactory(kind="monday", external_id="55")
    monday_url = f"{live_server.url}/webhooks/monday/"

    jira_body = hooks.body_of(hooks.jira_issue(project="PAY"))
    clickup_body = hooks.body_of(hooks.clickup_task(webhook_id="wh-1"))
    monday_body = hooks.body_of(hooks.monday_event(board=55))
    answers = {
        "jira forged": post(
            f"{live_server.url}/webhooks/jira/", jira_body, hooks.jira_headers(jira_body, secret="x")
        ),
        "jira": post(f"{live_server.url}/webhooks/jira/", jira_body, hooks.jira_headers(jira_body)),
        "clickup forged": post(
            f"{live_server.url}/webhooks/clickup/",
            clickup_body,
            hooks.clickup_headers(clickup_body, secret="x"),
        ),
        "clickup": post(
            f"{live_server.url}/webhooks/clickup/", clickup_body, hooks.clickup_headers(clickup_body)
        ),
        "monday challenge": post(monday_url, b'{"challenge": "abc123"}', {}),
        "monday forged": post(monday_url, monday_body, hooks.monday_headers(monday_url, secret="y" * 64)),
        "monday": post(monday_url, monday_body, hooks.monday_headers(monday_url)),
    }

    assert {name: status for name, (status, _) in answers.items()} == {
        "jira forged": 401,
        "jira": 202,
        "clickup forged": 401,
        "clickup": 202,
        "monday challenge": 200,
        "monday forged": 401,
        "monday": 202,
    }
    assert answers["monday challenge"][1] == {"challenge": "abc123"}
    synced = sorted(
        Job.objects.filter(type="workmanagement.sync").values_list("payload__connection_id", flat=True)
    )
    assert synced == sorted([jira.pk, clickup.pk, monday.pk])
