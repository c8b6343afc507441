"""Repositories (Re-index, Analyse, Sync now; saving a new one queues its ingest) and their
pull requests (Ask for a test plan, Capsule summary)."""

from __future__ import annotations

import functools
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from jobs import JobButton, RecordJobsMixin
from workspaces import admin_display, job_types, models
from workspaces.admin.common import RepositoryForm, SystemTimestamps, queue_jobs, start_workflows
from workspaces.providers import code_host
from workspaces.services import triggers


@admin.register(models.Repository)
class RepositoryAdmin(RecordJobsMixin, SystemTimestamps):
    form = RepositoryForm
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

    @method_decorator(sensitive_post_parameters("url"))
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # A URL may carry a credential: an error report of this page must not.
        return super().changeform_view(request, object_id, form_url, extra_context)

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
        queue_jobs(
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
        start_workflows(
            self,
            request,
            job_types.BUILD_CAPSULES,
            [functools.partial(triggers.request_capsules, repository) for repository in queryset],
        )


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
