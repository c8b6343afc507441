"""The AI job types with a model: the prompts they build from the recorded data, what the
artifacts record, decisions proposed from evidence, and the model's failures. The model is
a local server answering like the Chat Completions API (``MODEL_PROVIDER=openai``)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

import language_models
from tests.support.model_server import ModelServer, Reply
from workspaces.models import AIArtifact, Decision, ReviewCapsule, SourceItem, Workspace
from workspaces.services import analysis, brain, capsules, decisions, retention, workflows

from .factories import (
    AIArtifactFactory,
    OrganizationFactory,
    PullRequestFactory,
    RepositoryFactory,
    WorkConnectionFactory,
    WorkspaceFactory,
)

pytestmark = pytest.mark.django_db


def _ingested(**fields):
    return RepositoryFactory(
        ingested=True,
        findings=[{"rule": "debt.markers", "path": "app/models.py", "message": "1 TODO/FIXME marker"}],
        **fields,
    )


# --- repository.analyse ------------------------------------------------------------------------


def test_analyse__asks_the_model_about_the_ingested_repository_and_records_the_call(
    openai_model: ModelServer,
):
    repository = _ingested(name="shop")
    PullRequestFactory(repository=repository, number=4, title="Add checkout")
    openai_model.script(Reply.answer("Shop is a Django project.", input_tokens=512, output_tokens=64))

    analysis.analyse_repository(repository.pk)

    prompt = openai_model.received[0].prompt
    assert prompt.startswith("Summarise repository shop for an engineer who is new to it")
    for fact in (
        "- Kind: django-project; main language: Python",
        "- Languages by files: Python 4",
        "- Component app: 2 files (Python)",
        "- Entry point: manage.py",
        "- Finding debt.markers in app/models.py: 1 TODO/FIXME marker",
        "- Files: README.md, app/models.py, app/views.py, manage.py, tests/test_app.py",
        "- Recent pull request #4 (open): Add checkout",
    ):
        assert fact in prompt.splitlines()
    repository.refresh_from_db()
    assert repository.summary == "Shop is a Django project."
    artifact = AIArtifact.objects.get(kind="repository.analyse")
    assert (artifact.provider, artifact.model, artifact.input_tokens, artifact.output_tokens) == (
        "openai",
        "test-model",
        512,
        64,
    )
    assert artifact.latency_ms is not None and artifact.prompt == prompt and artifact.written_by_model


def test_analyse__a_model_timeout_is_retryable_and_changes_nothing(openai_model: ModelServer, settings):
    settings.MODEL_TIMEOUT = 0.3
    repository = _ingested()
    openai_model.script(Reply.never())
    with pytest.raises(language_models.ModelTimeout):
        analysis.analyse_repository(repository.pk)
    repository.refresh_from_db()
    assert repository.status == "ingested" and not repository.summary
    assert not AIArtifact.objects.exists()


def test_analyse__a_429_is_rate_limited_and_changes_nothing(openai_model: ModelServer):
    repository = _ingested()
    openai_model.script(Reply.error(429, retry_after="20"))
    with pytest.raises(language_models.ModelRateLimited):
        analysis.analyse_repository(repository.pk)
    assert not AIArtifact.objects.exists()


# --- ai.workflow -------------------------------------------------------------------------------


def test_test_plan__prompt_holds_the_pull_request_its_checks_and_the_findings_it_touches(
    openai_model: ModelServer,
):
    pull = PullRequestFactory(
        repository=_ingested(),
        number=12,
        title="Store orders",
        body="Adds an Order model.\nMigrations included.",
        changed_files=["app/models.py", "app/views.py"],
        ci_status="failure",
        checks=[{"name": "pytest", "conclusion": "failure"}],
        approvals=["carol"],
    )
    openai_model.script(Reply.answer("1. Create an order."))
    artifact = workflows.run_workflow("test_plan", pull.repository.workspace_id, pull_request_id=pull.pk)
    lines = openai_model.received[0].prompt.splitlines()
    assert lines[0].startswith("Write a test plan for pull request #12 (Store orders)")
    assert {
        "- Pull request #12: Store orders",
        "- Description: Adds an Order model. Migrations included.",
        "- Changed file: app/models.py",
        "- Changed file: app/views.py",
        "- CI status: failure",
        "- Check pytest: failure",
        "- Approved by: carol",
        "- Finding debt.markers in changed file app/models.py: 1 TODO/FIXME marker",
    } <= set(lines)
    assert (artifact.output, artifact.pull_request_id, artifact.model) == (
        "1. Create an order.",
        pull.pk,
        "test-model",
    )


def test_capsule_summary__prompt_holds_the_capsules_evidence(openai_model: ModelServer):
    pull = PullRequestFactory(merged=True, number=5, title="Ship it", approvals=["dan"], ci_status="success")
    capsules.build_retrospective(pull.repository_id)
    assert ReviewCapsule.objects.get().summary.startswith("Capsules retrospective: no model wrote this")
    assert not openai_model.received  # building capsules asks no model
    openai_model.script(Reply.answer("Ship it was reviewed by dan."))
    artifact = workflows.run_workflow(
        "capsule_summary", pull.repository.workspace_id, pull_request_id=pull.pk
    )
    lines = openai_model.received[0].prompt.splitlines()
    assert "- Capsule approvals: ['dan']" in lines and "- Capsule ci_status: success" in lines
    assert artifact.output == "Ship it was reviewed by dan."


# --- brain.derive ------------------------------------------------------------------------------


def test_brain_derive__the_models_notes_join_the_workspace_context(openai_model: ModelServer):
    repository = _ingested(name="api", summary="The API.")
    connection = WorkConnectionFactory(workspace=repository.workspace)
    SourceItem.objects.create(connection=connection, external_id="J-7", title="Rate limits", status="Open")
    openai_model.script(Reply.answer("api serves the shop's orders."))
    brain.derive_brain(repository.pk)
    lines = openai_model.received[0].prompt.splitlines()
    assert "- Summary so far: The API." in lines and "- Work item J-7 (Open): Rate limits" in lines
    entry = Workspace.objects.get(pk=repository.workspace_id).context["repositories"][str(repository.pk)]
    assert (entry["notes"], entry["notes_by"]) == ("api serves the shop's orders.", "test-model")
    assert AIArtifact.objects.get(kind="brain.derive").output_tokens == 17


# --- decisions.mine ----------------------------------------------------------------------------


def _record_with_decisions():
    repository = RepositoryFactory()
    PullRequestFactory(
        repository=repository,
        number=3,
        title="Switch to PostgreSQL",
        body="We decided to drop Redis. Tests pass.",
    )
    connection = WorkConnectionFactory(workspace=repository.workspace)
    SourceItem.objects.create(
        connection=connection, external_id="P-3", title="Auth", description="Going forward we use OIDC."
    )
    return repository.workspace


def test_decisions_mine__the_model_proposes_decisions_from_the_evidence_which_is_kept(
    openai_model: ModelServer,
):
    workspace = _record_with_decisions()
    answer = {
        "decisions": [
            {"title": "Use PostgreSQL instead of Redis", "evidence": [1, 2]},
            {"title": "Sign-in goes through OIDC", "evidence": [3]},
        ]
    }
    openai_model.script(Reply.answer(json.dumps(answer), input_tokens=300, output_tokens=40))

    assert decisions.mine_decisions(workspace.pk) == 2

    sent = openai_model.received[0]
    assert sent.body["response_format"] == {"type": "json_object"}
    facts = [line for line in sent.prompt.splitlines() if line.startswith("- [")]
    source = f"pr:{workspace.repositories.get().pk}#3"
    assert facts == [
        f"- [1] {source}: Switch to PostgreSQL.",
        f"- [2] {source}: We decided to drop Redis.",
        "- [3] item:P-3: Going forward we use OIDC.",
    ]
    postgres = Decision.objects.get(title="Use PostgreSQL instead of Redis")
    assert [item["quote"] for item in postgres.evidence] == [
        "Switch to PostgreSQL.",
        "We decided to drop Redis.",
    ]
    assert postgres.source == source and postgres.status == "proposed"
    artifact = postgres.artifact
    assert (artifact.kind, artifact.model, artifact.input_tokens, artifact.output_tokens) == (
        "decisions.mine",
        "test-model",
        300,
        40,
    )
    assert Decision.objects.get(title="Sign-in goes through OIDC").artifact == artifact

    # Mining again: every statement already rests under a decision, so nothing is asked.
    assert decisions.mine_decisions(workspace.pk) == 0
    assert len(openai_model.received) == 1


def test_decisions_mine__only_new_statements_go_to_the_model(openai_model: ModelServer):
    workspace = _record_with_decisions()
    openai_model.script(
        Reply.answer(json.dumps({"decisions": [{"title": "All three", "evidence": [1, 2, 3]}]}))
    )
    decisions.mine_decisions(workspace.pk)
    PullRequestFactory(repository=workspace.repositories.get(), number=9, title="Adopt ruff")
    openai_model.script(
        Reply.answer(json.dumps({"decisions": [{"title": "Lint with ruff", "evidence": [1]}]}))
    )
    assert decisions.mine_decisions(workspace.pk) == 1
    assert [line for line in openai_model.received[1].prompt.splitlines() if line.startswith("- [")] == [
        f"- [1] pr:{workspace.repositories.get().pk}#9: Adopt ruff."
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "Here are the decisions: use PostgreSQL.",
        '{"decisions": "use PostgreSQL"}',
        '{"decisions": [{"title": "Use PostgreSQL", "evidence": [7]}]}',
        '{"decisions": [{"title": "", "evidence": [1]}]}',
        '{"decisions": [{"title": "Use PostgreSQL", "evidence": []}]}',
    ],
    ids=["prose", "not-a-list", "unknown-evidence", "no-title", "no-evidence"],
)
def test_decisions_mine__an_answer_that_is_not_the_json_asked_for_is_retryable_and_saves_nothing(
    openai_model: ModelServer, answer
):
    workspace = _record_with_decisions()
    openai_model.script(Reply.answer(answer))
    with pytest.raises(language_models.InvalidAnswer):
        decisions.mine_decisions(workspace.pk)
    assert not Decision.objects.exists() and not AIArtifact.objects.exists()


# --- retention and the admin -------------------------------------------------------------------


def test_retention__purges_a_model_artifacts_bodies_and_keeps_what_the_call_cost():
    workspace = WorkspaceFactory(organization=OrganizationFactory(retention_days=7))
    artifact = AIArtifactFactory(
        workspace=workspace,
        provider="openai",
        model="test-model",
        input_tokens=10,
        output_tokens=5,
        latency_ms=80,
    )
    AIArtifact.objects.filter(pk=artifact.pk).update(created_at=timezone.now() - timedelta(days=8))
    assert retention.purge_expired() == 1
    artifact.refresh_from_db()
    assert (artifact.prompt, artifact.output) == ("", "")
    assert (artifact.model, artifact.input_tokens, artifact.output_tokens, artifact.latency_ms) == (
        "test-model",
        10,
        5,
        80,
    )


def test_admin__says_which_artifacts_no_model_wrote(admin_client):
    AIArtifactFactory(provider="local", model="local-digest")
    AIArtifactFactory(provider="openai", model="test-model", kind="brain.derive")
    page = admin_client.get(reverse("admin:workspaces_aiartifact_changelist")).content.decode()
    assert "No model: an extractive digest of the recorded facts (MODEL_PROVIDER=local)" in page
    assert "test-model (openai)" in page
