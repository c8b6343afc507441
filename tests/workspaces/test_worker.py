"""All eleven workspace job types run by a real ``manage.py runworker --burst``."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

import jobs
from jobs.models import Job, Status
from tests.support.model_server import Received, Reply
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
        "workspace.ready",  # a step of the provisioning workflow the provision job started
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
    # provisioning (a workflow) derived its repository's brain after it, and mined decisions
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


def test_runworker__ai_jobs_ask_the_configured_model_and_record_the_calls(start_worker, model_server):
    def answer(request: Received) -> Reply:
        if "repository limited" in request.prompt:
            return Reply.error(429, "slow down", retry_after="60")
        if request.wants_json:
            return Reply.answer(json.dumps({"decisions": [{"title": "Build it in Go", "evidence": [1]}]}))
        return Reply.answer(f"Written by the model about: {request.prompt.splitlines()[0]}", input_tokens=99)

    model_server.responder = answer
    repository = RepositoryFactory(ingested=True, name="shop")
    pull = PullRequestFactory(repository=repository, number=1, title="We decided to adopt Go")
    limited = RepositoryFactory(ingested=True, name="limited", workspace=repository.workspace)

    jobs.enqueue("repository.analyse", {"repository_id": repository.pk})
    jobs.enqueue(
        "ai.workflow",
        {"workflow": "test_plan", "workspace_id": repository.workspace_id, "pull_request_id": pull.pk},
    )
    jobs.enqueue("decisions.mine", {"workspace_id": repository.workspace_id})
    jobs.enqueue("brain.derive", {"repository_id": limited.pk})

    worker = start_worker(
        "--burst",
        env={
            "MODEL_PROVIDER": "openai",
            "OPENAI_BASE_URL": model_server.openai_url,
            "OPENAI_MODEL": "test-model",
            "OPENAI_API_KEY": "sk-test-key",
            "MODEL_TIMEOUT": "10",
        },
    )
    assert worker.wait(timeout=120) == 0, worker.log()

    succeeded = set(Job.objects.filter(status=Status.SUCCEEDED).values_list("type", flat=True))
    assert succeeded == {"repository.analyse", "ai.workflow", "decisions.mine"}, worker.log()
    repository.refresh_from_db()
    assert repository.summary.startswith("Written by the model about: Summarise repository shop")
    plan = AIArtifact.objects.get(kind="test_plan")
    assert (plan.model, plan.input_tokens, plan.output_tokens) == ("test-model", 99, 17)
    assert plan.latency_ms is not None and "- Pull request #1: We decided to adopt Go" in plan.prompt
    decision = Decision.objects.get()
    assert decision.title == "Build it in Go" and decision.artifact.model == "test-model"
    assert decision.evidence[0]["quote"] == "We decided to adopt Go."
    # A 429 is not a failed try: the job waits for the Retry-After (60 s) without using
    # an attempt, the reason shown as its message.
    limited_job = Job.objects.get(type="brain.derive")
    assert (limited_job.status, limited_job.attempts, limited_job.error) == (Status.QUEUED, 0, "")
    assert "rate limiting" in limited_job.message
    assert limited_job.run_at > timezone.now() + timedelta(seconds=30)
