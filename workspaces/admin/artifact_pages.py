"""What the AI jobs wrote: artifacts (deletable once retention blanked their bodies), proposed
decisions (Accept, Reject) and review capsules."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from jobs import JobButton, RecordJobsMixin
from workspaces import admin_display, models
from workspaces.admin.common import SystemTimestamps, SystemWritten
from workspaces.services import decisions


@admin.register(models.AIArtifact)
class AIArtifactAdmin(SystemWritten):
    """The prompt and output history of the AI jobs: deleted only once retention has blanked
    its bodies (``retention.purge``); until then it is the record of what was sent."""

    list_display = [
        "__str__",
        "workspace",
        "kind",
        "written_by",
        "input_tokens",
        "output_tokens",
        "latency_ms",
        "created_at",
        "bodies_purged_at",
    ]
    list_filter = ["kind", "provider"]
    fields = readonly_fields = (
        "workspace",
        "repository",
        "pull_request",
        "kind",
        "written_by",
        "input_tokens",
        "output_tokens",
        "latency_ms",
        "created_at",
        "bodies_purged_at",
        "prompt_text",
        "output_text",
        "data_block",
    )

    @admin.display(description="Written by", ordering="provider")
    def written_by(self, artifact: models.AIArtifact) -> str:
        if not artifact.written_by_model:
            return "No model: an extractive digest of the recorded facts (MODEL_PROVIDER=local)"
        return f"{artifact.model} ({artifact.provider})"

    @admin.display(description="Prompt")
    def prompt_text(self, artifact: models.AIArtifact):
        return admin_display.text_block(artifact.prompt)

    @admin.display(description="Output")
    def output_text(self, artifact: models.AIArtifact):
        return admin_display.text_block(artifact.output)

    @admin.display(description="Data")
    def data_block(self, artifact: models.AIArtifact):
        return admin_display.json_block(artifact.data)

    def deletable(self, artifact: models.AIArtifact) -> bool:
        return artifact.bodies_purged_at is not None


@admin.register(models.Decision)
class DecisionAdmin(RecordJobsMixin, SystemTimestamps):
    """Proposed by decisions.mine; a person accepts or rejects it. Rejected decisions stay,
    so mining never proposes them again: there is no deleting them."""

    list_display = ["title", "workspace", "status", "source", "proposed_by", "created_at"]
    list_filter = ["status"]
    fields = readonly_fields = (
        "workspace",
        "title",
        "status",
        "source",
        "proposed_by",
        "evidence_table",
        "created_at",
    )
    job_buttons = (
        JobButton("accept", "Accept", decisions.accept, shown=lambda d: d.status == d.Status.PROPOSED),
        JobButton("reject", "Reject", decisions.reject, shown=lambda d: d.status == d.Status.PROPOSED),
    )

    @admin.display(description="Proposed by")
    def proposed_by(self, decision: models.Decision) -> str:
        artifact = decision.artifact
        if artifact is None:
            return "The decision phrases in its evidence (no model)"
        return f"{artifact.model} ({artifact.provider})"

    @admin.display(description="Evidence")
    def evidence_table(self, decision: models.Decision):
        return admin_display.evidence_table(decision.evidence)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("artifact")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        # Every field is read-only: Accept and Reject are the page's only actions.
        quiet = {"show_save": False, "show_save_and_continue": False, "show_save_and_add_another": False}
        return super().change_view(request, object_id, form_url, {**quiet, **(extra_context or {})})


@admin.register(models.ReviewCapsule)
class ReviewCapsuleAdmin(SystemWritten):
    list_display = ["pull_request", "created_at"]
    fields = readonly_fields = ("pull_request", "summary_text", "data_block", "created_at")

    @admin.display(description="Summary")
    def summary_text(self, capsule: models.ReviewCapsule):
        return admin_display.text_block(capsule.summary)

    @admin.display(description="Data")
    def data_block(self, capsule: models.ReviewCapsule):
        return admin_display.json_block(capsule.data)
