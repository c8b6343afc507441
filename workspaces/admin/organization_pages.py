"""Organizations (Purge, their workspaces) and the trial reminders sent to them."""

from __future__ import annotations

from django.contrib import admin

from jobs import JobButton, RecordJobsMixin
from workspaces import job_types, models
from workspaces.admin.common import SystemTimestamps, SystemWritten, queue_jobs
from workspaces.services import triggers


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
        queue_jobs(
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
