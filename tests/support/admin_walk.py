"""Every page of the admin, as a superuser reaches it: each registered model's list, its
add form (when adding is offered) and the change page of one object of it.

``one_of_each()`` puts one row of every registered model into the database (with the
factories), and ``pages()`` lists the URLs, so the walk covers a model as soon as it is
registered: a model without a row here fails the walk, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.db import models
from django.urls import reverse
from django.utils import timezone

from jobs.models import Queue, Timer, TimerSlot, Worker, Workflow
from pipeline.models import (
    Attachment,
    EmailMessage,
    ErrorLogEntry,
    ModelCallSwitch,
    PipelineRun,
    VectorRecord,
)
from tests.factories import WORKER, JobAttemptFactory, JobFactory
from tests.workspaces import factories as workspace_factories
from workspaces import models as workspace_models


@dataclass(frozen=True)
class Page:
    model: str  # "app_label.ModelName"
    kind: str  # "list", "add" or "change"
    url: str

    def __str__(self) -> str:
        return f"{self.kind} {self.model} ({self.url})"


def one_of_each() -> dict[type[models.Model], models.Model]:
    """One saved row per registered model, built the way the system writes them."""
    from django_q.models import OrmQ, Schedule, Task
    from django_q.signing import SignedPackage

    now = timezone.now()
    email = EmailMessage.objects.create(
        blob_name="ab/abcdef",
        size=120,
        sha256="a" * 64,
        sender="ada@example.com",
        subject="Walk",
        status="failed",
        needs_review=True,
        labels=["invoice"],
    )
    # Its job waits for a retry: the list and the page say so.
    JobFactory(
        type="email.process",
        payload={"email_id": email.pk},
        attempts=1,
        error="ModelCallError: timed out",
        run_at=now + timedelta(minutes=2),
        keyed=True,
    )
    run = PipelineRun.objects.create(email=email, last_error="ValueError: walk")
    ErrorLogEntry.objects.create(error_class="ValueError", email=email, run=run, text="walk")
    repository = workspace_factories.RepositoryFactory(
        ingested=True, findings=[{"rule": "secrets.env-file", "path": ".env", "message": "Committed."}]
    )
    pull = workspace_factories.PullRequestFactory(repository=repository, merged=True)
    connection = workspace_factories.WorkConnectionFactory(workspace=repository.workspace)
    artifact = workspace_factories.AIArtifactFactory(workspace=repository.workspace, repository=repository)
    job = JobFactory(
        failed=True, type="repository.ingest", payload={"repository_id": repository.pk}, keyed=True
    )
    JobAttemptFactory(job=job)
    Task.objects.create(
        id="s" * 32, name="walk-success", func="jobs.timers.run_timer", started=now, stopped=now
    )
    Task.objects.create(
        id="f" * 32,
        name="walk-failure",
        func="jobs.timers.run_timer",
        started=now,
        stopped=now,
        success=False,
    )
    rows: dict[type[models.Model], models.Model] = {
        User: User.objects.filter(is_superuser=True).first() or User.objects.create_user("walker"),
        Group: Group.objects.create(name="operators"),
        Schedule: Schedule.objects.create(
            name="timer: walk", func="jobs.timers.run_timer", args="('sweep',)", minutes=5
        ),
        OrmQ: OrmQ.objects.create(
            key="platform", payload=SignedPackage.dumps({"id": "q" * 32, "name": "walk", "func": "print"})
        ),
        job._meta.model: job,
        job.failed_attempts.model: job.failed_attempts.get(),
        email._meta.model: email,
        Attachment: Attachment.objects.create(
            email=email, position=0, filename="report.pdf", content_type="application/pdf", size=10
        ),
        ModelCallSwitch: ModelCallSwitch.objects.create(pk=1, enabled=True),
        VectorRecord: VectorRecord.objects.create(
            email=email, collection="emails_walk_256", model="walk", dimensions=256, chunks=1, indexed_at=now
        ),
        workspace_models.Organization: repository.workspace.organization,
        workspace_models.TrialReminder: workspace_models.TrialReminder.objects.create(
            organization=repository.workspace.organization,
            trial_ends_at=now + timedelta(days=2),
            email="billing@example.com",
        ),
        workspace_models.Workspace: repository.workspace,
        workspace_models.Repository: repository,
        workspace_models.PullRequest: pull,
        workspace_models.WorkConnection: connection,
        workspace_models.SourceItem: workspace_models.SourceItem.objects.create(
            connection=connection, external_id="PROJ-1", title="Walk the admin"
        ),
        workspace_models.AIArtifact: artifact,
        workspace_models.Decision: workspace_models.Decision.objects.create(
            workspace=repository.workspace, title="Use PostgreSQL", source="pr:1", fingerprint="f" * 64
        ),
        workspace_models.ReviewCapsule: workspace_models.ReviewCapsule.objects.create(
            pull_request=pull, summary="A walk."
        ),
        workspace_models.WebhookDelivery: workspace_models.WebhookDelivery.objects.create(
            provider="github", delivery_id="walk-1", event="push", outcome="queued", job_ids=[job.pk]
        ),
    }
    rows[Worker] = Worker.objects.create(name=WORKER, host="host-a", pid=101, queues=["default", "mail"])
    # A workflow of two steps: the first one's job released, the second one waiting.
    import jobs

    rows[Workflow] = jobs.start(
        jobs.chain(jobs.step("test.step", {"value": "walk"}), jobs.step("test.step_plain")), name="walk"
    )
    # A timer with a run that failed, one that ran in a command and a missed slot.
    sweep = Timer.objects.get(name="sweep")  # installed at migrate
    TimerSlot.objects.create(timer=sweep, slot=now - timedelta(minutes=10), outcome="missed", covers=3)
    TimerSlot.objects.create(
        timer=sweep,
        slot=now - timedelta(minutes=5),
        outcome="succeeded",
        ran_in="manage.py sweep on host-a:7",
    )
    TimerSlot.objects.create(
        timer=sweep, slot=now, outcome="failed", job=job, started_at=now, finished_at=now
    )
    rows[Timer] = sweep
    rows[Queue] = Queue.objects.create(queue="ai", paused=True, limits_set=True, rate="100/m")
    rows[Task] = Task.objects.get(id="s" * 32)  # Success and Failure are proxies of it
    return rows


def row_for(model: type[models.Model], rows: dict[type[models.Model], Any]) -> models.Model:
    if model in rows:
        return rows[model]
    for known, row in rows.items():  # a proxy model (django-q2's Success, Failure) reads its concrete one
        if model._meta.concrete_model is known._meta.concrete_model:
            return model._default_manager.first() or row
    raise AssertionError(f"The admin walk has no row of {model._meta.label}: add one to one_of_each().")


def registered() -> dict[type[models.Model], admin.ModelAdmin]:
    """Every registered model and its page, as a web process has them: the URLconf
    discovers the admin modules (config/apps.py), which a test may not have imported yet."""
    admin.autodiscover()
    return admin.site._registry


def pages(rows: dict[type[models.Model], Any], request: Any) -> Iterator[Page]:
    """List, add (when offered to ``request``'s user) and change page of every registered model."""
    for model, model_admin in registered().items():
        info = model._meta.app_label, model._meta.model_name
        label = model._meta.label
        yield Page(label, "list", reverse("admin:{}_{}_changelist".format(*info)))
        if model_admin.has_add_permission(request):
            yield Page(label, "add", reverse("admin:{}_{}_add".format(*info)))
        row = row_for(model, rows)
        yield Page(label, "change", reverse("admin:{}_{}_change".format(*info), args=[row.pk]))
