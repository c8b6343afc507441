"""What the product enqueues on demand ("most jobs are enqueued on demand").

Each function only enqueues, in the caller's transaction (the job exists once the row that
asked for it is committed, and not at all if it rolls back), and returns the job. Each job
is deduplicated by its subject: asking twice while one is queued or running returns that
one. Nothing here waits for the work.

| moment | job |
|---|---|
| a repository is connected to a workspace (``connect_repository``) | ``repository.ingest`` |
| a workspace is created with its repositories (``create_workspace``) | ``workspace.provision`` |
| Re-index (repository page) | ``repository.ingest`` |
| Analyse (repository page) | ``repository.analyse`` |
| Sync now (repository page) | ``pullrequest.sync`` (which queues ``checks.sync`` when pull requests are supervised) |
| Provision (workspace page) | the ``workspace.provision`` workflow (``provisioning``) |
| Purge (organization page) | ``retention.purge`` of that organization |
| Ask for a test plan, Capsule summary (pull-request page) | a workflow: ``ai.workflow`` ``test_plan`` / ``capsule_summary``, after ``pullrequest.sync`` and ``checks.sync`` when the pull request is stale |
| Build review capsules (repository list) | the ``capsules.retrospective`` workflow: one ``capsule.build`` step per merged pull request |

A workflow (``jobs.start``) is started the same way, in the caller's transaction, and
deduplicated by its subject: pressing twice while one runs returns that one.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

import jobs
from jobs import Job, enqueue
from workspaces import job_types
from workspaces.models import Organization, PullRequest, Repository, Workspace
from workspaces.services import provisioning

# The registered workflows the pull-request page offers, by button.
TEST_PLAN = "test_plan"
CAPSULE_SUMMARY = "capsule_summary"
#: A pull request synced longer ago than this (as the reconcile timer's interval) is synced
#: again, with its checks, before an AI workflow reads it.
FRESH = timedelta(minutes=15)


def connect_repository(workspace: Workspace, *, name: str, url: str = "", **fields) -> tuple[Repository, Job]:
    """Add a repository to a workspace and queue its first ingest, in one transaction."""
    with transaction.atomic():
        repository = Repository.objects.create(workspace=workspace, name=name, url=url, **fields)
        return repository, request_ingest(repository)


def create_workspace(
    organization: Organization, *, name: str, repositories: Iterable[dict] = ()
) -> tuple[Workspace, jobs.Workflow | None]:
    """Create a workspace with its repositories and queue its provisioning, in one transaction.

    A workspace with no repository yet gets no job (there is nothing to set up from):
    connecting its first repository queues that repository's ingest, and Provision is
    pressed when it is complete.
    """
    with transaction.atomic():
        workspace = Workspace.objects.create(organization=organization, name=name)
        for fields in repositories:
            Repository.objects.create(workspace=workspace, **fields)
        return workspace, workspace_created(workspace)


def workspace_created(workspace: Workspace) -> jobs.Workflow | None:
    """The trigger of a new workspace (called once its repositories are saved)."""
    if not workspace.repositories.exists():
        return None
    return request_provision(workspace)


def request_ingest(repository: Repository) -> Job:
    return enqueue(job_types.INGEST_REPOSITORY, {"repository_id": repository.pk})


def request_analysis(repository: Repository) -> Job:
    return enqueue(job_types.ANALYSE_REPOSITORY, {"repository_id": repository.pk})


def request_purge(organization: Organization) -> Job:
    """Blank the organization's AI bodies past its retention window now, not at the next run."""
    return enqueue(job_types.PURGE_RETAINED_BODIES, {"organization_id": organization.pk})


def request_provision(workspace: Workspace) -> jobs.Workflow:
    """The provisioning workflow: ingests, ready, derives, decisions (``provisioning``)."""
    return provisioning.start_provisioning(workspace.pk)


def request_capsules(repository: Repository) -> jobs.Workflow:
    """capsules.retrospective as a workflow: it adds one capsule.build step per merged pull
    request it finds without a capsule."""
    return jobs.start(
        jobs.step(job_types.BUILD_CAPSULES, {"repository_id": repository.pk}),
        name=job_types.BUILD_CAPSULES,
        dedupe_key=f"repository:{repository.pk}",
    )


def request_pull_request_sync(repository: Repository) -> Job:
    return enqueue(job_types.SYNC_PULL_REQUESTS, {"repository_id": repository.pk})


def request_workflow(workflow: str, pull_request: PullRequest) -> jobs.Workflow:
    """Run an AI workflow on one pull request, after a pull-request and checks sync when
    the record is stale (``FRESH``), as one workflow: the model reads what the host says
    now. ``ai.workflow`` declares no key of its own (its subject varies by workflow), so its
    subject is spelled here, where the type is declared: one per pull request queued or
    running at a time."""
    repository = pull_request.repository
    ask = jobs.step(
        job_types.AI_WORKFLOW,
        {
            "workflow": workflow,
            "workspace_id": repository.workspace_id,
            "repository_id": repository.pk,
            "pull_request_id": pull_request.pk,
        },
        dedupe_key=f"workflow:{workflow}:pull_request:{pull_request.pk}",
    )
    flow: jobs.Step | jobs.Chain = ask
    if is_stale(pull_request):
        subject = {"repository_id": repository.pk}
        flow = jobs.chain(
            jobs.step(job_types.SYNC_PULL_REQUESTS, subject), jobs.step(job_types.SYNC_CHECKS, subject), ask
        )
    return jobs.start(flow, name=f"ai.{workflow}", dedupe_key=f"pull_request:{pull_request.pk}")


def is_stale(pull_request: PullRequest) -> bool:
    """Synced (and, when supervised, its checks observed) longer ago than ``FRESH``, or never."""
    since = timezone.now() - FRESH
    seen = [pull_request.synced_at] + ([pull_request.checks_observed_at] if pull_request.supervised else [])
    return any(moment is None or moment < since for moment in seen)
