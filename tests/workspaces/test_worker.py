"""All eleven workspace job types run by a real ``manage.py runworker --burst``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

import jobs
from jobs.models import Job, Status
from workspaces.models import AIArtifact, Decision, Repository, ReviewCapsule, SourceItem, Workspace
from workspaces.services.work_items import request_sync

from .factories import AIArtifactFactory, PullRequestFactory, RepositoryFactory, WorkConnectionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_runworker__runs_each_workspace_job_type(start_worker, tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "src").mkdir(parents=True)
    (checkout / "go.mod").write_text("module example.com/x\n")
    (checkout / "src" / "main.go").write_text("package main\n\nfunc main() {}\n")
    local = RepositoryFactory(local_path=str(checkout), metadata={})

    fresh = RepositoryFactory()  # a new workspace's only repository
    analysed = RepositoryFactory(
        ingested=True,
        metadata={
            "pull_requests": [{"number": 1, "title": "We decided to adopt Go", "state": "open"}],
            "checks": {"1": {"ci_status": "success", "approvals": ["ada"]}},
        },
    )
    merged = PullRequestFactory(repository=analysed, number=2, merged=True, supervised=True)
    supervised = PullRequestFactory(repository=analysed, number=3, supervised=True)
    connection = WorkConnectionFactory(
        workspace=analysed.workspace,
        snapshot=[{"id": "J-1", "title": "Switch to Postgres", "status": "Done"}],
    )
    old = AIArtifactFactory(workspace=analysed.workspace)
    AIArtifact.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=60))

    jobs.enqueue("repository.ingest", {"repository_id": local.pk})
    jobs.enqueue("workspace.provision", {"workspace_id": fresh.workspace_id})
    jobs.enqueue("repository.analyse", {"repository_id": analysed.pk})
    jobs.enqueue("pullrequest.sync", {"repository_id": analysed.pk})
    jobs.enqueue("checks.sync", {"repository_id": analysed.pk})
    request_sync(connection)
    jobs.enqueue("capsules.retrospective", {"repository_id": analysed.pk})
    jobs.enqueue(
        "ai.workflow",
        {"workflow": "test_plan", "workspace_id": analysed.workspace_id, "pull_request_id": supervised.pk},
    )
    jobs.enqueue("retention.purge", {})
    # Runs after the syncs (low priority): mines what they brought in.
    jobs.enqueue("decisions.mine", {"workspace_id": analysed.workspace_id}, priority="low")
    jobs.enqueue("brain.derive", {"repository_id": analysed.pk}, priority="low")
    jobs.enqueue("repository.ingest", {"repository_id": 10**9})  # gone: fails at once

    worker = start_worker("--burst", "--concurrency", "1")
    assert worker.wait(timeout=120) == 0, worker.log()

    outcomes = dict(Job.objects.values_list("type", "status").filter(status=Status.SUCCEEDED))
    assert set(outcomes) == {
        "repository.ingest",
        "workspace.provision",
        "repository.analyse",
        "pullrequest.sync",
        "checks.sync",
        "workmanagement.sync",
        "capsules.retrospective",
        "ai.workflow",
        "retention.purge",
        "decisions.mine",
        "brain.derive",
    }, worker.log()
    failed = Job.objects.get(status=Status.FAILED)
    assert (failed.type, failed.attempts, failed.max_attempts) == ("repository.ingest", 1, 3)
    assert "does not exist" in failed.error

    local.refresh_from_db()
    assert (local.status, local.kind, local.primary_language) == ("ingested", "go-module", "Go")
    fresh.refresh_from_db()
    assert fresh.status == Repository.Status.INGESTED
    assert Workspace.objects.get(pk=fresh.workspace_id).status == Workspace.Status.READY
    # provision queued brain.derive for its repository, and the burst worker ran it too
    assert str(fresh.pk) in Workspace.objects.get(pk=fresh.workspace_id).context["repositories"]
    analysed.refresh_from_db()
    assert analysed.status == Repository.Status.ANALYSED and analysed.summary
    assert str(analysed.pk) in Workspace.objects.get(pk=analysed.workspace_id).context["repositories"]
    assert analysed.pull_requests.filter(number=1, title="We decided to adopt Go").exists()
    supervised.refresh_from_db()
    assert supervised.checks_observed_at is not None
    assert SourceItem.objects.get(connection=connection).title == "Switch to Postgres"
    assert ReviewCapsule.objects.filter(pull_request=merged).exists()
    assert AIArtifact.objects.filter(kind="test_plan", pull_request=supervised).exists()
    assert AIArtifact.objects.get(pk=old.pk).output == ""
    assert set(Decision.objects.values_list("title", flat=True)) >= {
        "We decided to adopt Go.",
        "Switch to Postgres.",
    }
