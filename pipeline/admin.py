"""Admin for the pipeline: the email list (status, review, sender, subject, received,
origin) with each email's runs, artifacts, errors and jobs on its page, a reprocess action
(change permission), and the model-calls switch (who changed it and when is recorded on
save). An email page lists at most ``PIPELINE_ADMIN_ROWS`` attachments (the rest on the
attachments list, paginated) and shows its jobs' errors only to viewers of the jobs page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from jobs import Job, jobs_for, register_admin_link
from pipeline import switch
from pipeline.intake import PROCESS_JOB, enqueue_processing
from pipeline.models import (
    Attachment,
    EmailMessage,
    ErrorLogEntry,
    ModelCallSwitch,
    PipelineRun,
)

register_admin_link("mail-failed", "Failed jobs of the mail queue", status="failed", queue="mail")
VIEW_JOBS = "platform.view_jobs"  # the permission of the engine's jobs page


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class RunInline(ReadOnlyInline):
    model = PipelineRun
    fields = ("opened_at", "updated_at", "closed_at", "outcome", "sweep_count", "classified", "last_error")
    readonly_fields = fields


class AttachmentInline(ReadOnlyInline):
    """The first ``PIPELINE_ADMIN_ROWS`` attachments (positions run from 0 without gaps);
    ``attachments_summary`` counts them all and links to the rest."""

    model = Attachment
    fields = ("position", "filename", "content_type", "size", "converted", "note", "text_preview")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Attachment]:
        return super().get_queryset(request).filter(position__lt=settings.PIPELINE_ADMIN_ROWS)

    @admin.display(description="text")
    def text_preview(self, obj: Attachment) -> str:
        return obj.text[:300]


class ErrorInline(ReadOnlyInline):
    model = ErrorLogEntry
    fields = ("occurred_at", "error_class", "run", "job_id", "text")
    readonly_fields = fields


@admin.register(EmailMessage)
class EmailMessageAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "needs_review", "sender", "subject", "received_at", "origin_link")
    list_filter = ("status", "needs_review")
    search_fields = ("subject", "sender", "message_id")
    list_select_related = ("origin",)
    date_hierarchy = "received_at"
    actions = ["reprocess"]
    inlines = [RunInline, AttachmentInline, ErrorInline]
    readonly_fields = (
        "message_id",
        "sender",
        "subject",
        "received_at",
        "status",
        "labels",
        "origin",
        "blob_name",
        "size",
        "sha256",
        "source",
        "parsed_headers",
        "body_text",
        "defects",
        "classification_info",
        "index_info",
        "attachments_summary",
        "jobs",
        "jobs_without_errors",
    )
    fieldsets = [
        (
            None,
            {
                "fields": (
                    "subject",
                    "sender",
                    "message_id",
                    "received_at",
                    "status",
                    "needs_review",
                    "labels",
                )
            },
        ),
        ("Origin and storage", {"fields": ("origin", "source", "blob_name", "size", "sha256")}),
        (
            "Artifacts",
            {
                "fields": (
                    "parsed_headers",
                    "body_text",
                    "defects",
                    "classification_info",
                    "index_info",
                    "attachments_summary",
                )
            },
        ),
        ("Jobs", {"fields": ("jobs",)}),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # emails arrive through intake (import_mail, receive), never by hand

    def get_fieldsets(self, request: HttpRequest, obj: EmailMessage | None = None) -> list:
        if request.user.has_perm(VIEW_JOBS):
            return self.fieldsets
        # A job's error can tell what only viewers of the jobs page may see.
        return [*self.fieldsets[:-1], ("Jobs", {"fields": ("jobs_without_errors",)})]

    @admin.display(description="origin", ordering="origin")
    def origin_link(self, obj: EmailMessage) -> str:
        if obj.origin_id is None:
            return "-"
        url = reverse("admin:pipeline_emailmessage_change", args=[obj.origin_id])
        return format_html('<a href="{}">#{}</a>', url, obj.origin_id)

    def _parsed(self, obj: EmailMessage):
        return getattr(obj, "parsed", None) if obj.pk else None

    @admin.display(description="headers")
    def parsed_headers(self, obj: EmailMessage) -> str:
        parsed = self._parsed(obj)
        if parsed is None:
            return "-"
        limit = settings.PIPELINE_ADMIN_ROWS
        return format_html(
            "<table>{}</table>{}",
            format_html_join(
                "",
                "<tr><th>{}</th><td>{}</td></tr>",
                ((name, value[:300]) for name, value in parsed.headers[:limit]),
            ),
            _more(len(parsed.headers) - limit, "header lines"),
        )

    @admin.display(description="text body")
    def body_text(self, obj: EmailMessage) -> str:
        parsed = self._parsed(obj)
        return (
            format_html("<pre style='white-space: pre-wrap'>{}</pre>", parsed.body_text[:5000])
            if parsed
            else "-"
        )

    @admin.display(description="parser defects")
    def defects(self, obj: EmailMessage) -> str:
        parsed = self._parsed(obj)
        if parsed is None or not parsed.defects:
            return "-"
        limit = settings.PIPELINE_ADMIN_ROWS
        return format_html(
            "{}{}", "; ".join(parsed.defects[:limit]), _more(len(parsed.defects) - limit, "defects")
        )

    @admin.display(description="classification")
    def classification_info(self, obj: EmailMessage) -> str:
        record = getattr(obj, "classification", None) if obj.pk else None
        if record is None:
            return "-"
        return format_html(
            "{} by {} at {}<br><code>{}</code>",
            ", ".join(record.labels),
            record.model,
            record.classified_at,
            record.raw_response[:1000],
        )

    @admin.display(description="index record")
    def index_info(self, obj: EmailMessage) -> str:
        record = getattr(obj, "index_record", None) if obj.pk else None
        if record is None:
            return "-"
        return f"{len(record.text)} characters indexed at {record.indexed_at}"

    @admin.display(description="attachments")
    def attachments_summary(self, obj: EmailMessage) -> str:
        count = obj.attachments.count() if obj.pk else 0
        limit = settings.PIPELINE_ADMIN_ROWS
        if count <= limit:
            return str(count)
        url = reverse("admin:pipeline_attachment_changelist") + f"?email__id__exact={obj.pk}"
        return format_html(
            '{} attachments: the first {} are listed below, and {} more on <a href="{}">the list of all {}</a>.',
            f"{count:,}",
            limit,
            f"{count - limit:,}",
            url,
            f"{count:,}",
        )

    @admin.display(description="email.process jobs")
    def jobs(self, obj: EmailMessage) -> str:
        return self._jobs_table(obj, errors=True)

    @admin.display(description="email.process jobs")
    def jobs_without_errors(self, obj: EmailMessage) -> str:
        return self._jobs_table(obj, errors=False)

    def _jobs_table(self, obj: EmailMessage, *, errors: bool) -> str:
        rows = jobs_for(PROCESS_JOB, email_id=obj.pk)[:20] if obj.pk else []
        if not rows:
            return "-"
        return format_html(
            "<table><tr><th>job</th><th>status</th><th>tries</th><th>created</th>{}</tr>{}</table>",
            mark_safe("<th>error</th>") if errors else "",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td>{}</tr>",
                (
                    (
                        _job_link(job),
                        job.status,
                        job.attempts,
                        job.max_attempts,
                        job.created_at,
                        format_html("<td>{}</td>", job.error[:200]) if errors else "",
                    )
                    for job in rows
                ),
            ),
        )

    @admin.action(description="Reprocess selected emails", permissions=["change"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[EmailMessage]) -> None:
        queued = 0
        for email in queryset.select_related(None).only("pk")[:1000]:
            EmailMessage.objects.filter(pk=email.pk).update(needs_review=False)
            enqueue_processing(email.pk)
            queued += 1
        self.message_user(request, f"Queued {queued} email(s) for processing.", messages.SUCCESS)


def _more(count: int, what: str) -> str:
    return format_html("<p>… and {} more {}.</p>", f"{count:,}", what) if count > 0 else ""


def _job_link(job: Job) -> str:
    try:
        url = reverse("admin:platform_job_change", args=[job.pk])
    except NoReverseMatch:
        return f"#{job.pk}"
    return format_html('<a href="{}">#{}</a>', url, job.pk)


@admin.register(Attachment)
class AttachmentAdmin(admin.ModelAdmin):
    """All attachments of an email (``?email__id__exact=<id>``), paginated: the email's page
    lists only the first ``PIPELINE_ADMIN_ROWS``. Read-only, like every artifact."""

    list_display = ("position", "email_link", "filename", "content_type", "size", "converted", "note")
    list_display_links = None
    list_per_page = 100
    show_full_result_count = False
    fields = ("email", "position", "filename", "content_type", "size", "converted", "note", "text_preview")
    readonly_fields = fields

    @admin.display(description="email", ordering="email")
    def email_link(self, obj: Attachment) -> str:
        url = reverse("admin:pipeline_emailmessage_change", args=[obj.email_id])
        return format_html('<a href="{}">#{}</a>', url, obj.email_id)

    @admin.display(description="text")
    def text_preview(self, obj: Attachment) -> str:
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", obj.text[:5000])

    def get_model_perms(self, request: HttpRequest) -> dict[str, bool]:
        return {}  # not in the admin index: reached from an email's page

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ModelCallSwitch)
class ModelCallSwitchAdmin(admin.ModelAdmin):
    """One row; the list goes straight to it. Saving goes through ``switch.set_model_calls``
    so who/when are recorded and switching on queues the sweep."""

    fields = ("enabled", "changed_by", "changed_at")
    readonly_fields = ("changed_by", "changed_at")

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        row = switch.current()
        return HttpResponseRedirect(reverse("admin:pipeline_modelcallswitch_change", args=[row.pk]))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: ModelCallSwitch, form: object, change: bool) -> None:
        updated = switch.set_model_calls(obj.enabled, request.user)
        obj.changed_by, obj.changed_at = updated.changed_by, updated.changed_at
