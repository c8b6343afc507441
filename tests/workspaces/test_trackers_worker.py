"""workmanagement.sync run by a real ``manage.py runworker`` against a local stand-in for Jira:
a rate limit reschedules the job without using an attempt, refused credentials fail it at
once, and neither the job's payload nor its error holds the token."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet
from django.utils import timezone

from jobs.models import Job, JobAttempt, Status
from tests.support import trackers as fakes
from tests.support.job_states import wait_status
from workspaces import credentials
from workspaces.services.work_items import request_sync

from .factories import WorkConnectionFactory

pytestmark = pytest.mark.django_db(transaction=True)

KEY = Fernet.generate_key().decode()


@pytest.fixture
def jira(httpserver, settings):
    settings.CREDENTIALS_KEYS = [KEY]
    fake = fakes.FakeJira(httpserver)
    connection = WorkConnectionFactory(
        kind="jira",
        name="Payments",
        external_id="PAY",
        api_url=fake.url,
        account=fakes.JIRA_EMAIL,
        credential=credentials.encrypt(fakes.JIRA_TOKEN),
    )
    return fake, connection


@pytest.fixture
def worker(start_worker):
    def start():
        return start_worker(
            "--concurrency",
            "1",
            "--poll-interval",
            "0.1",
            env={"WORK_TRACKER": "api", "CREDENTIALS_KEYS": KEY},
        )

    return start


def _texts(job: Job) -> str:
    job.refresh_from_db()
    attempts = JobAttempt.objects.filter(job=job).values_list("error", "traceback")
    return json.dumps(job.payload) + job.error + job.message + "".join(a + t for a, t in attempts)


def test_worker__a_rate_limited_sync_waits_without_using_an_attempt_then_mirrors_the_project(jira, worker):
    fake, connection = jira
    fake.add_issue("PAY-1", "Refunds", updated=timezone.now())
    fake.trouble.append((429, {"Retry-After": "1"}, b'{"errorMessages": ["Rate limit exceeded."]}'))
    job = request_sync(connection)
    worker()

    done = wait_status(job.pk, Status.SUCCEEDED, timeout=60)

    assert done.attempts == 1
    outcomes = list(JobAttempt.objects.filter(job=job).values_list("outcome", flat=True))
    assert outcomes == ["postponed"]
    assert list(connection.items.values_list("external_id", flat=True)) == ["PAY-1"]
    assert fakes.JIRA_TOKEN not in _texts(done)


def test_worker__refused_credentials_fail_the_sync_at_once_naming_the_connection(jira, worker):
    fake, connection = jira
    connection.credential = credentials.encrypt("revoked-" + fakes.JIRA_TOKEN)
    connection.save()
    job = request_sync(connection)
    worker()

    failed = wait_status(job.pk, Status.FAILED, timeout=60)

    assert (failed.attempts, failed.max_attempts) == (1, 3)  # no retry: another try cannot fix it
    assert "connection #" in failed.error and '"Payments"' in failed.error
    assert fakes.JIRA_TOKEN not in _texts(failed)
    connection.refresh_from_db()
    assert "refused the credentials" in connection.last_error


def test_worker__an_issue_holding_a_nul_character_syncs_with_every_other_issue(jira, worker):
    fake, connection = jira
    fake.add_issue("PAY-1", "Refunds\u0000 fail", updated=timezone.now(), text="Line\u0000 one")
    fake.add_issue("PAY-2", "Payouts", updated=timezone.now())
    job = request_sync(connection)
    worker()

    wait_status(job.pk, Status.SUCCEEDED, timeout=60)

    items = dict(connection.items.values_list("external_id", "title"))
    assert items == {"PAY-1": "Refunds fail", "PAY-2": "Payouts"}
    assert connection.items.get(external_id="PAY-1").description == "Line one"
    connection.refresh_from_db()
    assert connection.last_error == "" and connection.item_count == 2
