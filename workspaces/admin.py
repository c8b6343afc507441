"""Admin for the workspace domain.

Each record's page shows what the background jobs did to it ("Recent jobs", through
``jobs.RecordJobsMixin``) and has buttons that queue more: Re-index, Analyse and Sync now
(repository), Provision (workspace), Purge (organization), Ask for a test plan and Capsule
summary (pull request); Accept and Reject answer a proposed decision. List actions do the
same for many rows and, like the buttons, need the change permission; saving a new
repository or workspace queues its first job (``services.triggers``).

What the system writes is read, never typed in: trial reminders, AI artifacts, review
capsules, source items and the synced fields of pull requests cannot be added or edited
here, ingest results and ``created_at`` are read-only, and an AI artifact can be deleted
only once retention has blanked its bodies.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpRequest
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.views.decorators.debug import sensitive_post_parameters

from jobs import Job, JobButton, RecordJobsMixin, admin_list_url, admin_url, enqueue, register_payload_link
from workspaces import admin_display, credentials, job_types, models
from workspaces.providers import code_host, work_tracker
from workspaces.services import decisions, triggers
from workspaces.services.work_items import WorkSyncResult, request_sync

register_payload_link("organization_id", "workspaces.organization", label="organization")
register_payload_link("workspace_id", "workspaces.workspace", label="workspace")
register_payload_link("repository_id", "workspaces.repository", label="repository")
register_payload_link("pull_request_id", "workspaces.pullrequest", label="pull request")
register_payload_link("connection_id", "workspaces.workconnection", label="connection")


def _queue(modeladmin: admin.ModelAdmin, request, type_name: str, payloads: list[dict]) -> None:
    """One job per payload; a subject that already has one queued or running keeps it. The
    message links the jobs (a few by number, more as the Background jobs page filtered)."""
    with transaction.atomic():
        queued = [enqueue(type_name, payload) for payload in payloads]
    modeladmin.message_user(request, queued_message(type_name, queued), messages.SUCCESS)


def queued_message(type_name: str, queued: list[Job]) -> str:
    if len(queued) <= 5:
        links = format_html_join(", ", '<a href="{}">#{}</a>', ((_job_url(job), job.pk) for job in queued))
        return format_html("Queued {} {} job(s): {}.", len(queued), type_name, links)
    listing = admin_list_url(type=type_name, status="queued")
    return format_html('Queued {} <a href="{}">{} jobs</a>.', len(queued), listing, type_name)


def _job_url(job: Job) -> str:
    return admin_url(job)


class SystemTimestamps(admin.ModelAdmin):
    """``created_at`` is written by the database: shown, never typed in."""

    class Media:
        css = {"all": ["workspaces/admin.css"]}

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if "created_at" not in fields and any(f.name == "created_at" for f in self.model._meta.fields):
            fields.append("created_at")
        return fields


class SystemWritten(SystemTimestamps):
    """Rows the jobs write: read, never added or edited by hand, and deleted only where
    ``deletable`` allows (retention)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is not None and self.deletable(obj) and super().has_delete_permission(request, obj)

    def deletable(self, obj: Any) -> bool:
        return False


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
class OrganizationAdmin(RecordJobsMixin, SystemTimestamps):
    list_display = ["name", "plan", "trial_ends_at", "billing_email", "retention_days", "last_job"]
    list_filter = ["plan"]
    search_fields = ["name", "billing_email"]
    inlines = [WorkspaceInline]
    actions = ["purge_retained"]
    jobs_subject = "organization_id"
    job_buttons = (JobButton("purge", "Purge", triggers.request_purge),)

    @admin.action(description="Purge AI bodies past retention", permissions=["change"])
    def purge_retained(self, request, queryset) -> None:
        _queue(
            self,
            request,
            job_types.PURGE_RETAINED_BODIES,
            [{"organization_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )


@admin.register(models.TrialReminder)
class TrialReminderAdmin(SystemWritten):
    """One row per reminder sent: deleting one would send it again."""

    list_display = ["organization", "trial_ends_at", "email", "sent_at"]
    readonly_fields = ["organization", "trial_ends_at", "email", "sent_at"]


@admin.register(models.Workspace)
class WorkspaceAdmin(RecordJobsMixin, SystemTimestamps):
    list_display = ["name", "organization", "status", "provisioned_at", "last_job"]
    list_filter = ["status"]
    search_fields = ["name"]
    inlines = [RepositoryInline]
    # Set by provisioning, brain.derive (the workspace's "brain") and the database.
    readonly_fields = ["status", "provisioned_at", "context", "created_at"]
    actions = ["provision", "mine_decisions"]
    jobs_subject = "workspace_id"
    job_buttons = (JobButton("provision", "Provision", triggers.request_provision),)

    def save_related(self, request, form, formsets, change) -> None:
        # Runs inside the admin's transaction, after the inline repositories are saved: a
        # new workspace is provisioned from them (which ingests them); a repository added
        # to an existing workspace is ingested on its own.
        super().save_related(request, form, formsets, change)
        if not change:
            triggers.workspace_created(form.instance)
            return
        for formset in formsets:
            if formset.model is models.Repository:
                for repository in formset.new_objects:
                    triggers.request_ingest(repository)

    @admin.action(description="Provision", permissions=["change"])
    def provision(self, request, queryset) -> None:
        _queue(
            self,
            request,
            job_types.PROVISION_WORKSPACE,
            [{"workspace_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )

    @admin.action(description="Mine decisions", permissions=["change"])
    def mine_decisions(self, request, queryset) -> None:
        _queue(
            self,
            request,
            job_types.MINE_DECISIONS,
            [{"workspace_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )


@admin.register(models.Repository)
class RepositoryAdmin(RecordJobsMixin, SystemTimestamps):
    list_display = ["name", "workspace", "status", "kind", "primary_language", "file_count", "last_job"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "url"]
    fieldsets = [
        (None, {"fields": ["workspace", "name", "url", "full_name", "local_path", "status", "kind"]}),
        (
            "Last fetch",
            {"fields": ["commit_sha", "branch", "ingested_at", "ingest_error", "credential_stored"]},
        ),
        (
            "What ingest found",
            {
                "fields": [
                    "primary_language",
                    "file_count",
                    "line_count",
                    "findings_table",
                    "languages_table",
                    "paths_list",
                ]
            },
        ),
        ("Code host", {"fields": ["code_host_label", "pulls_synced_at", "host_state_block"]}),
        ("Analysis", {"fields": ["analysed_at", "summary", "architecture_block"]}),
        ("Stored metadata (embedded defaults)", {"classes": ["collapse"], "fields": ["metadata"]}),
    ]
    # What ingest, the syncs and the analysis record: read, never typed in.
    readonly_fields = [
        "status",
        "kind",
        "primary_language",
        "file_count",
        "line_count",
        "paths_list",
        "host_state_block",
        "credential_stored",
        "code_host_label",
        "commit_sha",
        "branch",
        "ingest_error",
        "languages_table",
        "findings_table",
        "architecture_block",
        "summary",
        "ingested_at",
        "pulls_synced_at",
        "analysed_at",
    ]
    actions = ["reindex", "analyse", "sync_pull_requests", "build_capsules"]
    jobs_subject = "repository_id"
    job_buttons = (
        JobButton("reindex", "Re-index", triggers.request_ingest),
        JobButton("analyse", "Analyse", triggers.request_analysis),
        JobButton("sync", "Sync now", triggers.request_pull_request_sync),
    )

    @admin.display(description="Credential")
    def credential_stored(self, obj) -> str:
        return "stored encrypted (never shown)" if obj.credential else "none"

    @admin.display(description="Code host")
    def code_host_label(self, obj) -> str:
        return code_host().label

    @admin.display(description="Findings")
    def findings_table(self, obj):
        return admin_display.findings_table(obj.findings)

    @admin.display(description="Languages")
    def languages_table(self, obj):
        return admin_display.languages_table(obj.languages)

    @admin.display(description="Paths")
    def paths_list(self, obj):
        return admin_display.paths_list(obj.paths)

    @admin.display(description="Sync cursors (ETags, last update seen)")
    def host_state_block(self, obj):
        return admin_display.json_block(obj.host_state)

    @admin.display(description="Architecture")
    def architecture_block(self, obj):
        return admin_display.json_block(obj.architecture)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if not change:  # connecting a repository queues its first ingest (committed with it)
            triggers.request_ingest(obj)

    def _each(self, request, queryset, type_name: str) -> None:
        _queue(
            self, request, type_name, [{"repository_id": pk} for pk in queryset.values_list("pk", flat=True)]
        )

    @admin.action(description="Re-index", permissions=["change"])
    def reindex(self, request, queryset) -> None:
        self._each(request, queryset, job_types.INGEST_REPOSITORY)

    @admin.action(description="Analyse", permissions=["change"])
    def analyse(self, request, queryset) -> None:
        self._each(request, queryset, job_types.ANALYSE_REPOSITORY)

    @admin.action(description="Sync pull requests and checks", permissions=["change"])
    def sync_pull_requests(self, request, queryset) -> None:
        self._each(request, queryset, job_types.SYNC_PULL_REQUESTS)
        self._each(request, queryset, job_types.SYNC_CHECKS)

    @admin.action(description="Build review capsules", permissions=["change"])
    def build_capsules(self, request, queryset) -> None:
        self._each(request, queryset, job_types.BUILD_CAPSULES)


@admin.register(models.PullRequest)
class PullRequestAdmin(RecordJobsMixin, SystemTimestamps):
    """Synced from the code host: only ``supervised`` (whether checks.sync records its CI and
    approvals) is the operator's."""

    list_display = ["__str__", "title", "state", "supervised", "ci_status", "merged_at"]
    list_filter = ["state", "supervised", "ci_status"]
    search_fields = ["title", "author"]
    readonly_fields = [
        "repository",
        "number",
        "title",
        "body",
        "author",
        "state",
        "head_sha",
        "changed_files",
        "additions",
        "deletions",
        "merged_at",
        "updated_at_host",
        "ci_status",
        "checks",
        "approvals",
        "checks_observed_at",
        "synced_at",
    ]
    job_buttons = (
        JobButton(
            "test-plan",
            "Ask for a test plan",
            lambda pull: triggers.request_workflow(triggers.TEST_PLAN, pull),
        ),
        JobButton(
            "capsule-summary",
            "Capsule summary",
            lambda pull: triggers.request_workflow(triggers.CAPSULE_SUMMARY, pull),
            shown=lambda pull: models.ReviewCapsule.objects.filter(pull_request=pull).exists(),
        ),
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # pull requests come from the code host

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the next sync would bring it back


class WorkConnectionForm(forms.ModelForm):
    """The API token is write-only: typed in, stored encrypted, never shown back."""

    api_token = forms.CharField(
        label="API token",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: stored encrypted (CREDENTIALS_KEYS) and never shown again. "
        "Leave empty to keep the stored token.",
    )
    forget_api_token = forms.BooleanField(label="Remove the stored token", required=False)

    class Meta:
        model = models.WorkConnection
        fields = [
            "workspace",
            "kind",
            "name",
            "external_id",
            "active",
            "api_url",
            "account",
            "webhook_id",
            "snapshot",
        ]

    def save(self, commit: bool = True) -> models.WorkConnection:
        connection = super().save(commit=False)
        if self.cleaned_data.get("forget_api_token"):
            connection.credential = ""
        elif self.cleaned_data.get("api_token"):
            connection.credential = credentials.encrypt(self.cleaned_data["api_token"])
        if commit:
            connection.save()
        return connection


@admin.register(models.WorkConnection)
class WorkConnectionAdmin(RecordJobsMixin, SystemTimestamps):
    form = WorkConnectionForm
    job_buttons = (JobButton("sync", "Sync now", request_sync),)
    list_display = [
        "name",
        "kind",
        "workspace",
        "active",
        "last_synced_at",
        "item_count",
        "last_error_brief",
        "last_job",
    ]
    list_filter = ["kind", "active"]
    search_fields = ["name", "external_id"]
    actions = ["sync_now"]
    jobs_subject = "connection_id"
    fieldsets = [
        (None, {"fields": ["workspace", "kind", "name", "external_id", "active"]}),
        (
            "Provider",
            {
                "fields": [
                    "api_url",
                    "account",
                    "token_stored",
                    "api_token",
                    "forget_api_token",
                    "webhook_id",
                    "reads_from",
                ]
            },
        ),
        (
            "Last sync",
            {
                "fields": [
                    "last_synced_at",
                    "full_synced_at",
                    "item_counts",
                    "last_sync",
                    "last_error",
                    "last_error_at",
                ]
            },
        ),
        ("Embedded default (WORK_TRACKER=stored)", {"classes": ["collapse"], "fields": ["snapshot"]}),
    ]
    # What the sync records: read, never typed in.
    readonly_fields = [
        "reads_from",
        "token_stored",
        "last_synced_at",
        "full_synced_at",
        "item_counts",
        "last_sync",
        "last_error",
        "last_error_at",
    ]

    @method_decorator(sensitive_post_parameters("api_token"))
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # An error report of this page (DEBUG, the admins' email) must not carry the token.
        return super().changeform_view(request, object_id, form_url, extra_context)

    @admin.display(description="Stored token")
    def token_stored(self, connection: models.WorkConnection) -> str:
        return "stored encrypted (never shown)" if connection.credential else "none"

    @admin.display(description="Reads from")
    def reads_from(self, connection: models.WorkConnection) -> str:
        if connection.kind not in models.WorkConnection.Kind.values:
            return "-"
        return work_tracker(connection.kind).label

    @admin.display(description="Items")
    def item_counts(self, connection: models.WorkConnection) -> str:
        deleted = connection.items.filter(deleted_at__isnull=False).count() if connection.pk else 0
        return f"{connection.item_count} mirrored, {deleted} marked deleted"

    @admin.display(description="Last sync did")
    def last_sync(self, connection: models.WorkConnection) -> str:
        if not connection.last_sync_counts:
            return "-"
        return WorkSyncResult(**connection.last_sync_counts).summary()

    @admin.display(description="Last error")
    def last_error_brief(self, connection: models.WorkConnection) -> str:
        return Truncator(connection.last_error).chars(80) or "-"

    @admin.action(description="Sync now", permissions=["change"])
    def sync_now(self, request, queryset) -> None:
        inactive = [str(connection) for connection in queryset if not connection.active]
        with transaction.atomic():
            queued = [request_sync(connection) for connection in queryset if connection.active]
        if queued:
            self.message_user(request, f"Queued a sync for {len(queued)} connection(s).", messages.SUCCESS)
        if inactive:
            self.message_user(
                request,
                f"Not synced, inactive: {', '.join(inactive)}. Activate them first.",
                messages.WARNING,
            )


@admin.register(models.SourceItem)
class SourceItemAdmin(SystemWritten):
    list_display = ["external_id", "title", "status", "connection", "synced_at", "deleted_at"]
    list_filter = [("deleted_at", admin.EmptyFieldListFilter), "connection__kind"]
    search_fields = ["external_id", "title"]


@admin.register(models.WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """What each verified delivery led to, read-only: why something did or did not sync."""

    list_display = ["received_at", "provider", "event", "outcome", "detail", "jobs", "repeats"]
    list_filter = ["provider", "outcome", "event"]
    search_fields = ["delivery_id", "event", "detail"]
    date_hierarchy = "received_at"
    readonly_fields = [
        "received_at",
        "provider",
        "event",
        "delivery_id",
        "outcome",
        "detail",
        "jobs",
        "repeats",
    ]
    exclude = ["job_ids"]  # shown as links by ``jobs``

    @admin.display(description="Jobs")
    def jobs(self, delivery: models.WebhookDelivery):
        if not delivery.job_ids:
            return "-"
        return format_html_join(
            ", ",
            '<a href="{}">#{}</a>',
            ((admin_url(pk), pk) for pk in delivery.job_ids),
        )

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


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
