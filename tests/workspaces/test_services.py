"""Each job's work, called as plain service functions (no engine in the way)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

import jobs
from jobs import testing
from jobs.models import Job
from tests.support.providers import InMemoryCodeHost, InMemoryTracker
from workspaces.errors import (
    MissingRecord,
    NotReady,
    ProviderUnavailable,
    RepositoryUnreadable,
    UnknownWorkflow,
)
from workspaces.models import (
    AIArtifact,
    Decision,
    PullRequest,
    Repository,
    ReviewCapsule,
    SourceItem,
    Workspace,
)
from workspaces.providers import ChecksData, PullRequestData, WorkItemData, use_code_host, use_work_tracker
from workspaces.services import (
    analysis,
    brain,
    capsules,
    decisions,
    ingest,
    provisioning,
    retention,
    triggers,
    workflows,
)
from workspaces.services.pull_requests import sync_checks, sync_pull_requests
from workspaces.services.work_items import request_sync, sync_connection

from .factories import (
    AIArtifactFactory,
    OrganizationFactory,
    PullRequestFactory,
    RepositoryFactory,
    WorkConnectionFactory,
    WorkspaceFactory,
)

pytestmark = pytest.mark.django_db


# --- repository.ingest ----------------------------------------------------------------------


def test_ingest__reads_a_local_checkout_classifies_and_scans_it(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "pkg" / "core.py").write_text("def f():\n    return 1  # FIXME\n")
    (tmp_path / "pkg" / "web.ts").write_text("export const a = 1;\n")
    (tmp_path / ".env").write_text("SECRET=AKIAABCDEFGHIJKLMNOP\n")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\0\0binary")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    repository = RepositoryFactory(local_path=str(tmp_path), metadata={})
    seen = []

    ingest.ingest_repository(repository.pk, progress=lambda percent, message: seen.append(percent))

    repository.refresh_from_db()
    assert repository.status == Repository.Status.INGESTED
    assert repository.kind == "python-package"
    assert repository.primary_language == "Python"
    assert repository.paths == [".env", "pkg/core.py", "pkg/web.ts", "pyproject.toml"]
    assert repository.languages == {"Python": 1, "TypeScript": 1}
    rules = {(f["rule"], f["path"]) for f in repository.findings}
    assert {
        ("secrets.env-file", ".env"),
        ("secrets.aws-key", ".env"),
        ("debt.markers", "pkg/core.py"),
    } <= rules
    assert ("quality.no-tests", "") in rules
    assert seen[-1] == 100


def test_ingest__reads_stored_files_when_there_is_no_local_path():
    repository = RepositoryFactory()
    ingest.ingest_repository(repository.pk)
    repository.refresh_from_db()
    assert repository.kind == "django-project"
    assert repository.file_count == 5
    assert "quality.no-tests" not in {f["rule"] for f in repository.findings}


def test_ingest__fails_permanently_without_files_or_row(tmp_path):
    with pytest.raises(RepositoryUnreadable):
        ingest.ingest_repository(RepositoryFactory(metadata={}).pk)
    with pytest.raises(RepositoryUnreadable):
        ingest.ingest_repository(RepositoryFactory(local_path=str(tmp_path / "missing")).pk)
    with pytest.raises(MissingRecord):
        ingest.ingest_repository(987654)


# --- repository.analyse, brain.derive, ai.workflow --------------------------------------------


def test_analyse__writes_a_summary_and_architecture_map_and_keeps_the_artifact():
    repository = RepositoryFactory(ingested=True)
    analysis.analyse_repository(repository.pk)
    repository.refresh_from_db()
    assert repository.status == Repository.Status.ANALYSED
    names = [c["name"] for c in repository.architecture["components"]]
    assert names == ["(root)", "app", "tests"]
    assert repository.architecture["entry_points"] == ["manage.py"]
    assert repository.summary.startswith("Repository analyse: no model wrote this")
    assert "* Entry point: manage.py" in repository.summary
    artifact = AIArtifact.objects.get(repository=repository, kind="repository.analyse")
    assert artifact.output == repository.summary and "- Entry point: manage.py" in artifact.prompt
    assert (artifact.provider, artifact.model, artifact.input_tokens) == ("local", "local-digest", None)
    assert not artifact.written_by_model and artifact.latency_ms is not None


def test_analyse__is_deterministic():
    first, second = (
        RepositoryFactory(ingested=True, name="same"),
        RepositoryFactory(ingested=True, name="same"),
    )
    analysis.analyse_repository(first.pk)
    analysis.analyse_repository(second.pk)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.summary == second.summary


def test_analyse__refuses_a_repository_not_ingested():
    with pytest.raises(NotReady):
        analysis.analyse_repository(RepositoryFactory().pk)


def test_brain_derive__adds_each_repository_to_the_workspace_context():
    workspace = WorkspaceFactory()
    one = RepositoryFactory(workspace=workspace, ingested=True, name="api")
    two = RepositoryFactory(workspace=workspace, ingested=True, name="web")
    brain.derive_brain(one.pk)
    brain.derive_brain(two.pk)
    workspace.refresh_from_db()
    entries = workspace.context["repositories"]
    assert {entries[str(one.pk)]["name"], entries[str(two.pk)]["name"]} == {"api", "web"}
    assert entries[str(one.pk)]["components"] == ["(root)", "app", "tests"]
    assert AIArtifact.objects.filter(kind="brain.derive").count() == 2


def test_ai_workflow__runs_a_registered_workflow_and_persists_the_artifact():
    pull = PullRequestFactory(repository=RepositoryFactory(ingested=True), changed_files=["a.py", "b.py"])
    artifact = workflows.run_workflow("test_plan", pull.repository.workspace_id, pull_request_id=pull.pk)
    assert artifact.kind == "test_plan"
    assert artifact.repository_id == pull.repository_id
    assert "* Changed file: a.py" in artifact.output and "* Changed file: b.py" in artifact.output
    assert artifact.output.startswith("Test plan: no model wrote this")


def test_ai_workflow__unknown_workflow_and_missing_subject_fail_permanently():
    workspace = WorkspaceFactory()
    with pytest.raises(UnknownWorkflow):
        workflows.run_workflow("no_such_thing", workspace.pk)
    with pytest.raises(NotReady):
        workflows.run_workflow("test_plan", workspace.pk)


# --- pullrequest.sync and checks.sync --------------------------------------------------------


def test_pullrequest_sync__mirrors_the_hosts_pull_requests():
    repository = RepositoryFactory()
    merged_at = timezone.now() - timedelta(days=1)
    host = InMemoryCodeHost(
        pulls={
            repository.pk: [
                PullRequestData(1, "Add login", author="ada", state="merged", merged_at=merged_at),
                PullRequestData(2, "Fix typo", author="bob", changed_files=("README.md",)),
            ]
        }
    )
    PullRequestFactory(repository=repository, number=2, title="old title")
    with use_code_host(host):
        result = sync_pull_requests(repository.pk)
    assert (result.created, result.updated) == (1, 1)
    rows = {p.number: p for p in repository.pull_requests.all()}
    assert rows[1].state == "merged" and rows[1].merged_at == merged_at
    assert rows[2].title == "Fix typo" and rows[2].changed_files == ["README.md"]


def test_pullrequest_sync__default_host_reads_stored_metadata():
    repository = RepositoryFactory(
        metadata={"pull_requests": [{"number": 7, "title": "Seven", "state": "open"}]}
    )
    sync_pull_requests(repository.pk)
    assert repository.pull_requests.get().title == "Seven"


def test_checks_sync__records_ci_and_approvals_of_supervised_open_pull_requests_only():
    repository = RepositoryFactory()
    supervised = PullRequestFactory(repository=repository, number=1, supervised=True)
    unsupervised = PullRequestFactory(repository=repository, number=2)
    host = InMemoryCodeHost(
        results={
            (repository.pk, 1): ChecksData(
                "success", [{"name": "tests", "conclusion": "success"}], ["carol"]
            ),
            (repository.pk, 2): ChecksData("failure"),
        }
    )
    with use_code_host(host):
        assert sync_checks(repository.pk) == 1
    supervised.refresh_from_db()
    unsupervised.refresh_from_db()
    assert supervised.ci_status == "success" and supervised.approvals == ["carol"]
    assert supervised.checks_observed_at is not None
    assert unsupervised.ci_status == "" and unsupervised.checks_observed_at is None


# --- workmanagement.sync ---------------------------------------------------------------------


def test_work_sync__reconciles_items_added_changed_and_marks_vanished_ones_deleted():
    connection = WorkConnectionFactory()
    SourceItem.objects.create(connection=connection, external_id="P-1", title="Old")
    SourceItem.objects.create(connection=connection, external_id="P-9", title="Gone")
    tracker = InMemoryTracker(
        boards={connection.pk: [WorkItemData("P-1", "Renamed", "In progress"), WorkItemData("P-2", "New")]}
    )
    with use_work_tracker("jira", tracker):
        result = sync_connection(connection.pk)
        assert (result.created, result.updated, result.deleted) == (1, 1, 1)
        again = sync_connection(connection.pk)
        assert (again.created, again.updated, again.deleted) == (0, 0, 0)
    live = dict(connection.items.filter(deleted_at__isnull=True).values_list("external_id", "title"))
    assert live == {"P-1": "Renamed", "P-2": "New"}
    assert connection.items.get(external_id="P-9").deleted_at is not None
    connection.refresh_from_db()
    assert connection.last_synced_at is not None and connection.item_count == 2


def test_work_sync__skips_an_inactive_connection_and_keeps_its_items():
    connection = WorkConnectionFactory(inactive=True)
    SourceItem.objects.create(connection=connection, external_id="P-1", title="Kept")
    tracker = InMemoryTracker()
    with use_work_tracker("jira", tracker):
        sync_connection(connection.pk)
    assert tracker.calls == 0
    assert connection.items.count() == 1


def test_work_sync__provider_outage_is_retryable_and_changes_nothing():
    connection = WorkConnectionFactory()
    with use_work_tracker("jira", InMemoryTracker(down=True)), pytest.raises(ProviderUnavailable):
        sync_connection(connection.pk)
    connection.refresh_from_db()
    assert connection.last_synced_at is None


def test_request_sync__dedupes_on_the_connection_id():
    connection = WorkConnectionFactory()
    first, second = request_sync(connection), request_sync(connection)
    assert first.pk == second.pk
    assert first.dedupe_key == f"connection:{connection.pk}"
    assert Job.objects.filter(type="workmanagement.sync").count() == 1


# --- decisions.mine --------------------------------------------------------------------------


def test_decisions_mine__proposes_each_decision_once():
    repository = RepositoryFactory()
    PullRequestFactory(repository=repository, title="Switch to PostgreSQL", body="We decided to drop Redis.")
    connection = WorkConnectionFactory(workspace=repository.workspace)
    SourceItem.objects.create(
        connection=connection, external_id="P-3", title="Auth", description="Going forward we use OIDC. Nice."
    )
    assert decisions.mine_decisions(repository.workspace_id) == 3
    assert decisions.mine_decisions(repository.workspace_id) == 0
    titles = set(Decision.objects.values_list("title", flat=True))
    assert titles == {"Switch to PostgreSQL.", "We decided to drop Redis.", "Going forward we use OIDC."}
    assert set(Decision.objects.values_list("status", flat=True)) == {"proposed"}
    redis = Decision.objects.get(title="We decided to drop Redis.")
    assert redis.evidence == [
        {"source": redis.source, "quote": "We decided to drop Redis.", "fingerprint": redis.fingerprint}
    ]
    assert redis.artifact is None  # the local rules proposed it, no model


# --- workspace.provision ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # its steps run inline, each committing with its release
def test_provision__a_workflow_ingests_the_new_repositories_marks_ready_derives_each_then_mines():
    fresh = RepositoryFactory()
    known = RepositoryFactory(ingested=True, workspace=fresh.workspace)
    workflow = provisioning.start_provisioning(fresh.workspace_id)

    columns = [
        [(step.type, step.payload) for step in steps]
        for _, steps in itertools.groupby(jobs.workflow_steps(workflow), key=lambda step: step.depth)
    ]
    workspace = {"workspace_id": fresh.workspace_id}
    assert columns == [
        [("repository.ingest", {"repository_id": fresh.pk})],  # the new repository only
        [("workspace.ready", workspace)],
        [("brain.derive", {"repository_id": fresh.pk}), ("brain.derive", {"repository_id": known.pk})],
        [("decisions.mine", workspace)],
    ]
    assert provisioning.start_provisioning(fresh.workspace_id).pk == workflow.pk  # while it runs
    assert Workspace.objects.get(pk=fresh.workspace_id).status == Workspace.Status.NEW

    testing.drain()
    workflow.refresh_from_db()
    assert workflow.status == "succeeded", jobs.workflow_steps(workflow)
    fresh.refresh_from_db()
    assert fresh.status == Repository.Status.INGESTED
    provisioned = Workspace.objects.get(pk=fresh.workspace_id)
    assert provisioned.status == Workspace.Status.READY
    assert set(provisioned.context["repositories"]) == {str(fresh.pk), str(known.pk)}


def test_provision__refuses_a_workspace_without_repository():
    with pytest.raises(NotReady):
        provisioning.start_provisioning(WorkspaceFactory().pk)


# --- capsules.retrospective ------------------------------------------------------------------


def test_capsules__built_for_the_last_few_merged_pull_requests_once():
    repository = RepositoryFactory()
    now = timezone.now()
    for number in range(1, 8):
        PullRequestFactory(
            repository=repository, number=number, merged=True, merged_at=now - timedelta(days=number)
        )
    PullRequestFactory(repository=repository, number=99)  # open: no capsule
    assert capsules.build_retrospective(repository.pk) == 5
    assert capsules.build_retrospective(repository.pk) == 0
    numbers = sorted(ReviewCapsule.objects.values_list("pull_request__number", flat=True))
    assert numbers == [1, 2, 3, 4, 5]
    capsule = ReviewCapsule.objects.get(pull_request__number=1)
    assert capsule.data["ci_status"] == "unknown"
    assert capsule.summary.startswith("Capsules retrospective: no model wrote this")


@pytest.mark.django_db(transaction=True)
def test_capsules__as_a_workflow_adds_one_step_per_merged_pull_request():
    repository = RepositoryFactory()
    now = timezone.now()
    for number in range(1, 4):
        PullRequestFactory(
            repository=repository, number=number, merged=True, merged_at=now - timedelta(days=number)
        )
    workflow = triggers.request_capsules(repository)
    testing.drain()

    workflow.refresh_from_db()
    assert (workflow.status, workflow.steps) == ("succeeded", 4)
    built = [step.name for step in jobs.workflow_steps(workflow) if step.type == "capsule.build"]
    assert len(built) == 3 and all(name.startswith("capsule.build[pull_request:") for name in built)
    assert sorted(ReviewCapsule.objects.values_list("pull_request__number", flat=True)) == [1, 2, 3]


def test_capsule_summary_workflow__summarises_a_capsule():
    pull = PullRequestFactory(merged=True)
    capsules.build_retrospective(pull.repository_id)
    artifact = workflows.run_workflow(
        "capsule_summary", pull.repository.workspace_id, pull_request_id=pull.pk
    )
    assert "* Capsule title: " in artifact.output


# --- retention.purge -------------------------------------------------------------------------


def test_retention_purge__blanks_bodies_past_each_organizations_window():
    short = WorkspaceFactory(organization=OrganizationFactory(retention_days=7))
    long = WorkspaceFactory(organization=OrganizationFactory(retention_days=90))
    old_short = AIArtifactFactory(workspace=short)
    old_long = AIArtifactFactory(workspace=long)
    new_short = AIArtifactFactory(workspace=short)
    ten_days_ago = timezone.now() - timedelta(days=10)
    AIArtifact.objects.filter(pk__in=[old_short.pk, old_long.pk]).update(created_at=ten_days_ago)

    assert retention.purge_expired() == 1
    assert retention.purge_expired() == 0

    old_short.refresh_from_db()
    assert (old_short.prompt, old_short.output) == ("", "") and old_short.bodies_purged_at is not None
    assert AIArtifact.objects.get(pk=old_long.pk).output == "the output"
    assert AIArtifact.objects.get(pk=new_short.pk).output == "the output"


def test_pull_request_state_choices_match_the_default_host():
    assert set(PullRequest.State.values) == {"open", "merged", "closed"}
