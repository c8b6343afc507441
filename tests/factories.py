"""factory-boy factories for the engine's rows, with a trait per state.

    JobFactory()                      # queued, due now
    JobFactory(running=True)          # claimed by a worker, heartbeating
    JobFactory(failed=True, attempts=3)
    JobFactory(type="repository.ingest", payload={"repository_id": 7}, keyed=True)  # "repository:7"
    JobAttemptFactory(job=job, attempt=2)

The queue and the attempt budget come from the registry, as enqueue would set them. For
the engine's own behaviour use ``jobs.store``; these only put rows into a state, for tests
that read them (the admin page, the reaper's inputs).
"""

from __future__ import annotations

from datetime import timedelta

import factory
from django.utils import timezone

from jobs import registry
from jobs.models import Job, JobAttempt, Status

WORKER = "host-a:101:0"


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job

    type = "test.noop"
    queue = factory.LazyAttribute(lambda job: registry.get(job.type).queue)
    max_attempts = factory.LazyAttribute(lambda job: registry.get(job.type).attempts)
    payload = factory.Dict({})
    status = Status.QUEUED
    run_at = factory.LazyFunction(timezone.now)

    class Params:
        claimed = factory.Trait(
            attempts=1,
            locked_by=WORKER,
            started_at=factory.LazyFunction(lambda: timezone.now() - timedelta(seconds=12)),
        )
        running = factory.Trait(
            claimed=True, status=Status.RUNNING, heartbeat_at=factory.LazyFunction(timezone.now)
        )
        succeeded = factory.Trait(
            claimed=True,
            status=Status.SUCCEEDED,
            progress=100,
            finished_at=factory.LazyFunction(timezone.now),
        )
        failed = factory.Trait(
            claimed=True,
            status=Status.FAILED,
            error="RuntimeError: boom",
            finished_at=factory.LazyFunction(timezone.now),
        )
        cancelled = factory.Trait(status=Status.CANCELLED, finished_at=factory.LazyFunction(timezone.now))
        # The dedupe key enqueue would derive from the payload (a record's jobs are found by it).
        keyed = factory.Trait(
            dedupe_key=factory.LazyAttribute(lambda job: registry.get(job.type).dedupe_key(job.payload))
        )


class JobAttemptFactory(factory.django.DjangoModelFactory):
    """One failed try, with its error and traceback."""

    class Meta:
        model = JobAttempt

    job = factory.SubFactory(JobFactory, failed=True)
    type = factory.SelfAttribute("job.type")
    attempt = 1
    worker = WORKER
    started_at = factory.SelfAttribute("job.started_at")
    error_class = "RuntimeError"
    error = factory.LazyAttribute(lambda attempt: f"boom on try {attempt.attempt}")
    traceback = factory.LazyAttribute(
        lambda attempt: (
            f'Traceback (most recent call last):\n  File "tasks.py", line {attempt.attempt}\n'
            f"RuntimeError: boom {attempt.attempt}"
        )
    )
    outcome = Status.QUEUED
