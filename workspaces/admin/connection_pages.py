"""Work connections (their credential typed in and stored encrypted, Sync now), the items they
synced, and the webhook deliveries received."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.utils.decorators import method_decorator
from django.utils.html import format_html_join
from django.utils.text import Truncator
from django.views.decorators.debug import sensitive_post_parameters

from jobs import JobButton, RecordJobsMixin, admin_url
from workspaces import credentials, models
from workspaces.admin.common import SystemTimestamps, SystemWritten
from workspaces.providers import work_tracker
from workspaces.services.work_items import WorkSyncResult, request_sync


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

    def clean_api_token(self) -> str:
        token = self.cleaned_data.get("api_token", "")
        problem = credentials.key_problem() if token else ""
        if problem:
            # Saving would fail on the key: say so here rather than answer 500.
            raise forms.ValidationError(
                "The token cannot be stored: CREDENTIALS_KEYS is not a list of Fernet keys "
                "(see manage.py check --deploy)."
            )
        return token

    def save(self, commit: bool = True) -> models.WorkConnection:
        connection = super().save(commit=False)
        if self.cleaned_data.get("forget_api_token"):
            connection.credential = ""
        elif self.cleaned_data.get("api_token"):
            connection.credential = credentials.seal(self.cleaned_data["api_token"], connection.api_origin())
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

    def save_model(self, request, obj, form, change) -> None:
        kept = obj.credential
        super().save_model(request, obj, form, change)
        if kept and not obj.credential:  # the model drops a token whose address moved host
            self.message_user(
                request,
                "The API address names another host than the stored token was entered for: "
                "the token was removed. Enter it again to sync.",
                messages.WARNING,
            )

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
