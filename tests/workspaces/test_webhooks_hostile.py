"""Signed but hostile deliveries: a secret speaking for another webhook, a token carrying
another body or living for years, bodies nested past reason, numbers that are not numbers,
NUL characters. Each is answered with the platform's own 4xx (or stored cleanly), never a
500 or a traceback."""

from __future__ import annotations

import time

import jwt
import pytest
from django.test import Client
from django.utils import timezone

from jobs.models import Job
from tests.support import webhooks as hooks
from workspaces.models import WebhookDelivery, WebhookToken
from workspaces.webhooks import tokens

from .factories import PullRequestFactory, RepositoryFactory, WorkConnectionFactory

pytestmark = pytest.mark.django_db

GITHUB, JIRA, CLICKUP, MONDAY = (
    "/webhooks/github/",
    "/webhooks/jira/",
    "/webhooks/clickup/",
    "/webhooks/monday/",
)
MONDAY_AUDIENCE = "http://testserver/webhooks/monday/"
SECRET_A, SECRET_B = "clickup-secret-of-webhook-a-0123456789", "clickup-secret-of-webhook-b-0123456789"


@pytest.fixture(autouse=True)
def secrets(settings):
    settings.GITHUB_WEBHOOK_SECRET = [hooks.GITHUB_SECRET]
    settings.JIRA_WEBHOOK_SECRET = [hooks.JIRA_SECRET]
    settings.CLICKUP_WEBHOOK_SECRET = [f"wh-a:{SECRET_A}", f"wh-b:{SECRET_B}"]
    settings.MONDAY_SIGNING_SECRET = [hooks.MONDAY_SECRET]
    settings.MONDAY_WEBHOOK_URL = ""
    settings.MONDAY_WEBHOOK_TOKEN_MAX_AGE = 3600
    settings.WEBHOOK_MAX_BODY_BYTES = 1024 * 1024
    settings.WEBHOOK_MAX_DEPTH = 64


def _post(url: str, body: bytes, headers: dict[str, str]):
    client = Client(raise_request_exception=False)  # a server error is an answer to assert on
    return client.post(url, data=body, content_type="application/json", headers=headers)


def _monday_token(*, lifetime: int = 300, issued_ago: int = 0, iat: bool = True) -> str:
    now = int(time.time()) - issued_ago
    claims = {"accountId": 1825528, "userId": 4012689, "aud": MONDAY_AUDIENCE, "exp": now + lifetime}
    if iat:
        claims["iat"] = now
    return jwt.encode(claims, hooks.MONDAY_SECRET, algorithm="HS256")


# --- ClickUp: each secret speaks for its own webhook only ------------------------------------


def test_clickup__a_body_signed_with_webhook_as_secret_naming_webhook_b_is_refused():
    WorkConnectionFactory(kind="clickup", webhook_id="wh-a")
    b = WorkConnectionFactory(kind="clickup", webhook_id="wh-b", full_synced_at=timezone.now())
    body = hooks.body_of(hooks.clickup_task("taskDeleted", webhook_id="wh-b"))

    forged = _post(CLICKUP, body, hooks.clickup_headers(body, secret=SECRET_A))
    genuine = _post(CLICKUP, body, hooks.clickup_headers(body, secret=SECRET_B))

    assert forged.status_code == 401 and forged.json()["outcome"] == "refused"
    assert genuine.status_code == 202
    b.refresh_from_db()
    assert b.full_synced_at is None  # reset by the genuine delivery only
    assert [job.payload for job in Job.objects.all()] == [{"connection_id": b.pk}]
    assert WebhookDelivery.objects.count() == 1


def test_clickup__a_secret_listed_without_its_webhook_verifies_nothing_and_the_log_says_so(settings, caplog):
    settings.CLICKUP_WEBHOOK_SECRET = [SECRET_A]
    WorkConnectionFactory(kind="clickup", webhook_id="wh-a")
    body = hooks.body_of(hooks.clickup_task(webhook_id="wh-a"))

    assert _post(CLICKUP, body, hooks.clickup_headers(body, secret=SECRET_A)).status_code == 401
    assert not Job.objects.exists()
    assert "<webhook id>:<secret>" in caplog.text and SECRET_A not in caplog.text


# --- Monday: a token is bound to its body and lives briefly ----------------------------------


def test_monday__one_token_carries_its_first_body_and_its_retries_but_no_other_body():
    WorkConnectionFactory(kind="monday", external_id="55")
    WorkConnectionFactory(kind="monday", external_id="66", full_synced_at=timezone.now())
    token = _monday_token()
    first = hooks.body_of(hooks.monday_event("create_pulse", board=55, trigger="t-1"))
    other = hooks.body_of(hooks.monday_event("delete_pulse", board=66, trigger="t-2"))

    accepted = _post(MONDAY, first, {"Authorization": token})
    retried = _post(MONDAY, first, {"Authorization": token})
    reused = _post(MONDAY, other, {"Authorization": token})

    assert accepted.status_code == 202
    assert retried.status_code == 200 and retried.json()["outcome"] == "repeat"
    assert reused.status_code == 401
    assert Job.objects.count() == 1
    assert WebhookToken.objects.count() == 1


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda: _monday_token(lifetime=10 * 365 * 86400), id="ten-years"),
        pytest.param(lambda: _monday_token(lifetime=10 * 365 * 86400, iat=False), id="ten-years-no-iat"),
        pytest.param(lambda: _monday_token(lifetime=7200, issued_ago=7000), id="issued-for-two-hours"),
    ],
)
def test_monday__a_token_valid_longer_than_the_max_age_is_refused(token):
    WorkConnectionFactory(kind="monday", external_id="55")
    body = hooks.body_of(hooks.monday_event(board=55))

    assert _post(MONDAY, body, {"Authorization": token()}).status_code == 401
    assert not Job.objects.exists()


def test_monday__the_max_age_is_a_setting(settings):
    settings.MONDAY_WEBHOOK_TOKEN_MAX_AGE = 120
    WorkConnectionFactory(kind="monday", external_id="55")
    body = hooks.body_of(hooks.monday_event(board=55))

    assert _post(MONDAY, body, {"Authorization": _monday_token(lifetime=300)}).status_code == 401
    assert _post(MONDAY, body, {"Authorization": _monday_token(lifetime=100)}).status_code == 202


def test_monday__expired_tokens_are_forgotten_by_the_prune():
    WebhookToken.objects.create(
        provider="monday", token_sha256="a" * 64, body_sha256="b" * 64, expires_at=timezone.now()
    )
    WebhookToken.objects.create(
        provider="monday",
        token_sha256="c" * 64,
        body_sha256="d" * 64,
        expires_at=timezone.now() + timezone.timedelta(minutes=5),
    )

    assert tokens.prune() == 1
    assert list(WebhookToken.objects.values_list("token_sha256", flat=True)) == ["c" * 64]


# --- depth, numbers, NUL ------------------------------------------------------------------------


def _signed(url: str, body: bytes) -> dict[str, str]:
    if url == GITHUB:
        return hooks.github_headers(body, "pull_request_review")
    if url == JIRA:
        return hooks.jira_headers(body)
    if url == CLICKUP:
        return hooks.clickup_headers(body, secret=SECRET_A)
    return {"Authorization": _monday_token()}


@pytest.mark.parametrize("url", [GITHUB, JIRA, CLICKUP, MONDAY])
@pytest.mark.parametrize("levels", [100_000, 65])
def test_webhooks__a_signed_body_nested_too_deep_gets_400(url, levels):
    body = b'{"a": ' + b"[" * levels + b"]" * levels + b"}"

    response = _post(url, body, _signed(url, body))

    assert response.status_code == 400
    assert "WEBHOOK_MAX_DEPTH" in response.json()["detail"]
    assert not WebhookDelivery.objects.exists()


def test_webhooks__a_body_as_deep_as_the_limit_is_read():
    body = b'{"event": "taskUpdated", "webhook_id": "wh-a", "x": ' + b"[" * 62 + b"]" * 62 + b"}"
    WorkConnectionFactory(kind="clickup", webhook_id="wh-a")

    assert _post(CLICKUP, body, _signed(CLICKUP, body)).status_code == 202


@pytest.mark.parametrize("number", ["²", "٣", "99999999999999999999", -1, 2**40, True, 1.5])
def test_github__a_review_number_that_is_not_a_pull_requests_number_is_ignored(number):
    repository = RepositoryFactory(url="https://github.com/acme/api.git")
    PullRequestFactory(repository=repository, number=7, supervised=True, head_sha="f" * 40)
    payload = {
        "action": "submitted",
        "pull_request": {"number": number, "head": {"sha": "0" * 40}},
        "repository": hooks.repository("acme/api"),
    }
    body = hooks.body_of(payload)

    response = _post(GITHUB, body, _signed(GITHUB, body))

    assert response.status_code == 202 and response.json()["outcome"] == "ignored"
    assert not Job.objects.exists()


def test_clickup__a_signed_delivery_with_nul_characters_is_recorded_without_them():
    connection = WorkConnectionFactory(kind="clickup", webhook_id="wh-a")
    payload = hooks.clickup_task("task\u0000Updated", webhook_id="wh-a", task_id="abc\u00001\ud800")
    body = hooks.body_of(payload)

    response = _post(CLICKUP, body, _signed(CLICKUP, body))

    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert delivery.event == "taskUpdated" and "\x00" not in delivery.detail
    assert "abc1\ufffd" in delivery.detail
    assert [job.payload for job in Job.objects.all()] == [{"connection_id": connection.pk}]


def test_clickup__a_webhook_id_with_a_nul_character_is_refused_not_a_server_error(settings):
    settings.CLICKUP_WEBHOOK_SECRET = [f"wh-a:{SECRET_A}", f"wh-\u0000a:{SECRET_A}"]
    WorkConnectionFactory(kind="clickup", webhook_id="wh-a")
    body = hooks.body_of(hooks.clickup_task(webhook_id="wh-\u0000a"))

    response = _post(CLICKUP, body, _signed(CLICKUP, body))

    assert response.status_code < 500
