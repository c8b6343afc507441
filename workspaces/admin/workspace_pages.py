"""Workspaces: Provision (a workflow), their repositories inline; saving a new one starts its
provisioning."""

from __future__ import annotations

import functools

from django.contrib import admin
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from jobs import JobButton, RecordJobsMixin
from workspaces import job_types, models
from workspaces.admin.common import RepositoryForm, SystemTimestamps, queue_jobs, start_workflows
from workspaces.services import triggers


class RepositoryInline(admin.TabularInline):
    model = models.Repository
    form = RepositoryForm
    fields = ["name", "url", "status", "primary_language", "kind", "file_count"]
    readonly_fields = ["status", "primary_language", "kind", "file_count"]
    extra = 0


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

    @method_decorator(sensitive_post_parameters())
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # The inline repositories' URLs may carry credentials: no error report shows the form.
        return super().changeform_view(request, object_id, form_url, extra_context)

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
        start_workflows(
            self,
            request,
            job_types.PROVISION_WORKSPACE,
            [functools.partial(triggers.request_provision, workspace) for workspace in queryset],
        )

    @admin.action(description="Mine decisions", permissions=["change"])
    def mine_decisions(self, request, queryset) -> None:
        queue_jobs(
            self,
            request,
            job_types.MINE_DECISIONS,
            [{"workspace_id": pk} for pk in queryset.values_list("pk", flat=True)],
        )
