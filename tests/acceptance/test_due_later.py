"""Jobs due later through a real ``manage.py runworker``: promoted and started when their
time comes, not at the worker's next poll."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import store
from jobs.models import Status
from tests.support.job_states import wait_status

pytestmark = pytest.mark.django_db(transaction=True)


def test_due_later__a_delayed_job_and_a_retrys_backoff_start_when_due_not_at_the_next_poll(start_worker):
    # The worker's next poll is an hour away after its first look, and a retry wakes no
    # one: a job that runs within the minute each wait allows was promoted at the moment
    # its promotion said it would be due, however loaded the machine.
    later = store.enqueue("test.record", {}, run_at=timezone.now() + timedelta(seconds=2))
    flaky = store.enqueue("test.flaky", {"fail_times": 1})  # its retry waits out a 0.1 s backoff
    start_worker("--concurrency", "1", "--poll-interval", "3600", "--name", "due-later")

    retried = wait_status(flaky.pk, Status.SUCCEEDED, timeout=60)
    assert retried.attempts == 2
    ran = wait_status(later.pk, Status.SUCCEEDED, timeout=60)
    assert ran.attempts == 1 and ran.started_at >= later.run_at
