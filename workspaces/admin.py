"""Admin for the workspace domain, with buttons-as-actions that queue the on-demand jobs."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction

from jobs import enqueue
from workspaces import models
from workspaces.services.work_items import request_sync


def _queue(modeladmin: admin.ModelAdmin, request, type_name: str, payloads: list[dict]) -> None:
    """One job per payload; a subject that already has one queued or running keeps it."""
    with transaction.atomic():
        for payload in payloads:
            enqueue(type_name, payload)
    modeladmin.message_user(request, f"Queued {len(payloads)} {type_name} job(s).", messages.SUCCESS)


class RepositoryInline(admin.TabularInline):
    model = models.Repository
    fields = ["name", "url", "status", "primary_language", "kind", "file_count"]
    readonly_fields = ["status", "primary_language", "kind", "file_count"]
    extra = 0


class WorkspaceInline(admin.TabularInline):
    model = models.Workspace
    fields = ["name", "status", "provisioned_at"]
    readonly_fields = ["status", "provisioned_at"]
    extra = 0


@admin.register(models.Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "plan", "trial_ends_at", "billing_email", "retention_days"]
    list_filter = ["plan"]
    search_fields = ["name", "billing_email"]
    inlines = [WorkspaceInline]
    actions = ["purge_retained"]

    @admin.action(description="Purge AI bodies past retention")
    def purge_retained(self, request, queryset) -> None:
        _queue(
            self,
            request,
            "retention.purge",
            [{"organization_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )


@admin.register(models.TrialReminder)
class TrialReminderAdmin(admin.ModelAdmin):
    list_display = ["organization", "trial_ends_at", "email", "sent_at"]
    readonly_fields = ["organization", "trial_ends_at", "email", "sent_at"]


@admin.register(models.Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "status", "provisioned_at"]
    list_filter = ["status"]
    search_fields = ["name"]
    inlines = [RepositoryInline]
    actions = ["provision", "mine_decisions"]

    @admin.action(description="Provision")
    def provision(self, request, queryset) -> None:
        _queue(
            self,
            request,
            "workspace.provision",
            [{"workspace_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )

    @admin.action(description="Mine decisions")
    def mine_decisions(self, request, queryset) -> None:
        _queue(
            self,
            request,
            "decisions.mine",
            [{"workspace_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )


@admin.register(models.Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = ["name", "workspace", "status", "kind", "primary_language", "file_count", "ingested_at"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "url"]
    readonly_fields = ["languages", "findings", "architecture", "summary", "ingested_at", "analysed_at"]
    actions = ["reindex", "analyse", "sync_pull_requests", "build_capsules"]

    def _each(self, request, queryset, type_name: str) -> None:
        _queue(
            self, request, type_name, [{"repository_id": pk} for pk in queryset.values_list("pk", flat=True)]
        )

    @admin.action(description="Re-index")
    def reindex(self, request, queryset) -> None:
        self._each(request, queryset, "repository.ingest")

    @admin.action(description="Analyse")
    def analyse(self, request, queryset) -> None:
        self._each(request, queryset, "repository.analyse")

    @admin.action(description="Sync pull requests and checks")
    def sync_pull_requests(self, request, queryset) -> None:
        self._each(request, queryset, "pullrequest.sync")
        self._each(request, queryset, "checks.sync")

    @admin.action(description="Build review capsules")
    def build_capsules(self, request, queryset) -> None:
        self._each(request, queryset, "capsules.retrospective")


@admin.register(models.PullRequest)
class PullRequestAdmin(admin.ModelAdmin):
    list_display = ["__str__", "title", "state", "supervised", "ci_status", "merged_at"]
    list_filter = ["state", "supervised", "ci_status"]
    search_fields = ["title", "author"]


@admin.register(models.WorkConnection)
class WorkConnectionAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "workspace", "active", "last_synced_at"]
    list_filter = ["kind", "active"]
    actions = ["sync_now"]

    @admin.action(description="Sync now")
    def sync_now(self, request, queryset) -> None:
        with transaction.atomic():
            for connection in queryset:
                request_sync(connection)
        self.message_user(request, f"Queued a sync for {queryset.count()} connection(s).", messages.SUCCESS)


@admin.register(models.SourceItem)
class SourceItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "status", "connection", "synced_at"]
    search_fields = ["external_id", "title"]


@admin.register(models.AIArtifact)
class AIArtifactAdmin(admin.ModelAdmin):
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
    readonly_fields = ["written_by", "provider", "model", "input_tokens", "output_tokens", "latency_ms"]

    @admin.display(description="Written by", ordering="provider")
    def written_by(self, artifact: models.AIArtifact) -> str:
        if not artifact.written_by_model:
            return "No model: an extractive digest of the recorded facts (MODEL_PROVIDER=local)"
        return f"{artifact.model} ({artifact.provider})"


@admin.register(models.Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ["title", "workspace", "status", "source", "proposed_by", "created_at"]
    list_filter = ["status"]
    readonly_fields = ["evidence", "artifact", "fingerprint"]

    @admin.display(description="Proposed by")
    def proposed_by(self, decision: models.Decision) -> str:
        if decision.artifact_id is None:
            return "The decision phrases in its evidence (no model)"
        return f"{decision.artifact.model} ({decision.artifact.provider})"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("artifact")


@admin.register(models.ReviewCapsule)
class ReviewCapsuleAdmin(admin.ModelAdmin):
    list_display = ["pull_request", "created_at"]
