"""Admin for the pipeline: the email list (status with its job's state, review flag, sender,
subject, received, origin, last job) with each email's runs, artifacts, errors and recent
jobs on its page, Reprocess on the page and as a list action (change permission), and the
model-calls switch (who changed it and when is recorded on save). An email page lists at
most ``PIPELINE_ADMIN_ROWS`` attachments (the rest on the attachments list, paginated) and
shows its jobs' errors only to viewers of the jobs page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

import jobs
from jobs import Job, JobButton, RecordJobsMixin, register_admin_link, register_payload_link
from pipeline import job_types, switch
from pipeline.index_admin import MeaningSearchMixin, similar_html, vector_record_html
from pipeline.intake import reprocess
from pipeline.models import (
    Attachment,
    EmailMessage,
    ErrorLogEntry,
    ModelCallSwitch,
    PipelineRun,
    Status,
    VectorRecord,
)

register_admin_link("mail-failed", "Failed jobs of the mail queue", status="failed", queue="mail")
register_payload_link("email_id", "pipeline.emailmessage", label="email")


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
    fields = (
        "opened_at",
        "updated_at",
        "closed_at",
        "outcome_text",
        "sweep_count",
        "classified",
        "error_text",
    )
    readonly_fields = fields

    @admin.display(description="outcome")
    def outcome_text(self, run: PipelineRun) -> str:
        """An open run says what its job is doing: waiting for a retry, or failed for good
        (then only a Reprocess, or the sweeper, starts it again)."""
        if not run.is_open:
            return run.get_outcome_display()
        job = jobs.latest_job(job_types.PROCESS_EMAIL, email_id=run.email_id)
        if job is not None and job.status == "failed":
            return format_html(
                "open — its job {} failed for good after {}/{} tries: Reprocess starts it again",
                _job_link(job),
                job.attempts,
                job.max_attempts,
            )
        if job is not None and job.waiting_for_retry:
            return format_html("open — {} (job {})", RecordJobsMixin.job_state(job), _job_link(job))
        return "open"

    @admin.display(description="last error")
    def error_text(self, run: PipelineRun) -> str:
        return format_html('<span class="pl-wrap">{}</span>', run.last_error) if run.last_error else "-"


class AttachmentInline(ReadOnlyInline):
    """The first ``PIPELINE_ADMIN_ROWS`` attachments (positions run from 0 without gaps);
    ``attachments_summary`` counts them all and links to the rest."""

    model = Attachment
    fields = ("position", "filename_text", "content_type", "size", "converted", "note", "text_preview")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Attachment]:
        return super().get_queryset(request).filter(position__lt=settings.PIPELINE_ADMIN_ROWS)

    @admin.display(description="filename")
    def filename_text(self, obj: Attachment) -> str:
        return format_html('<span class="pl-wrap">{}</span>', obj.filename) if obj.filename else "-"

    @admin.display(description="text")
    def text_preview(self, obj: Attachment) -> str:
        return format_html('<span class="pl-wrap pl-clamp">{}</span>', obj.text[:300]) if obj.text else "-"


class ErrorInline(ReadOnlyInline):
    model = ErrorLogEntry
    fields = ("occurred_at", "error_class", "run", "job", "error_text")
    readonly_fields = fields

    @admin.display(description="job")
    def job(self, entry: ErrorLogEntry) -> str:
        return _job_link(entry.job_id) if entry.job_id else "-"

    @admin.display(description="text")
    def error_text(self, entry: ErrorLogEntry) -> str:
        return format_html('<span class="pl-wrap">{}</span>', entry.text[:2000])


@admin.register(EmailMessage)
class EmailMessageAdmin(MeaningSearchMixin, RecordJobsMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "status_text",
        "review",
        "sender_text",
        "subject_text",
        "received_at",
        "origin_link",
        "last_job",
    )
    list_display_links = ("id", "subject_text")
    list_filter = ("status", "needs_review")
    search_fields = ("subject", "sender", "message_id")
    list_select_related = ("origin",)
    date_hierarchy = "received_at"
    actions = ["reprocess"]
    inlines = [RunInline, AttachmentInline, ErrorInline]
    jobs_subject = "email_id"
    job_buttons = (JobButton("reprocess", "Reprocess", reprocess),)
    readonly_fields = (
        "message_id",
        "sender",
        "subject",
        "received_at",
        "status_text",
        "labels_list",
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
        "vector_info",
        "similar_emails",
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
                    "status_text",
                    "needs_review",
                    "labels_list",
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
        ("Search by meaning", {"fields": ("vector_info", "similar_emails")}),
    ]

    class Media:
        css = {"all": ["pipeline/admin.css"]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # emails arrive through intake (import_mail, receive), never by hand

    def get_fieldsets(self, request: HttpRequest, obj: EmailMessage | None = None) -> list:
        if obj is not None and obj.needs_review:
            return self.fieldsets
        # The review flag shows only when it is set (clearing it is the operator's answer).
        first, *rest = self.fieldsets
        fields = tuple(name for name in first[1]["fields"] if name != "needs_review")
        return [(first[0], {**first[1], "fields": fields}), *rest]

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[list, dict, set, list]:
        """What deleting these emails deletes. Their attachments and index records go with
        them: those pages offer no Delete of their own, which Django would otherwise read as
        a missing permission and refuse the email's deletion (403) to everyone."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        own = {str(model._meta.verbose_name) for model in (Attachment, VectorRecord)}
        return deleted, counts, perms_needed - own, protected

    # --- the list ---------------------------------------------------------------------------

    @admin.display(description="status", ordering="status")
    def status_text(self, obj: EmailMessage) -> str:
        """The email's status, and while it is failed, what its job does about it:
        "failed — retrying 2/3 at 12:04", or "failed for good after 3/3 tries"."""
        status = obj.get_status_display()
        job = self.last_job_of(obj) if obj.status == Status.FAILED else None
        if job is None:
            return status
        if job.waiting_for_retry:
            return f"{status} — {self.job_state(job)}"
        if job.status == "failed":
            return f"{status} for good after {job.attempts}/{job.max_attempts} tries"
        if job.status == "running":
            return f"{status} — running try {job.attempts}/{job.max_attempts}"
        return status

    @admin.display(description="review", ordering="needs_review", empty_value="")
    def review(self, obj: EmailMessage) -> str:
        return mark_safe('<span class="pl-review">needs review</span>') if obj.needs_review else ""

    @admin.display(description="sender", ordering="sender")
    def sender_text(self, obj: EmailMessage) -> str:
        return format_html('<span class="pl-wrap pl-clamp" title="{}">{}</span>', obj.sender, obj.sender)

    @admin.display(description="subject", ordering="subject")
    def subject_text(self, obj: EmailMessage) -> str:
        subject = obj.subject or "(no subject)"
        return format_html(
            '<span class="pl-wrap pl-clamp" title="{}">{}</span>', subject[:1000], subject[:300]
        )

    @admin.display(description="labels")
    def labels_list(self, obj: EmailMessage) -> str:
        labels = (
            [label for label in obj.labels if isinstance(label, str)] if isinstance(obj.labels, list) else []
        )
        if not labels:
            return "-"
        return format_html(
            '<ul class="pl-labels">{}</ul>',
            format_html_join("", '<li class="pl-label">{}</li>', ((x,) for x in labels)),
        )

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
        return format_html('<pre class="pl-pre">{}</pre>', parsed.body_text[:5000]) if parsed else "-"

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

    @admin.display(description="vectors")
    def vector_info(self, obj: EmailMessage) -> str:
        return vector_record_html(obj)

    @admin.display(description="similar emails")
    def similar_emails(self, obj: EmailMessage) -> str:
        return similar_html(obj)

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

    @admin.action(description="Reprocess selected emails", permissions=["change"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[EmailMessage]) -> None:
        queued = 0
        for email in queryset.select_related(None).only("pk")[:1000]:
            job = reprocess(email)
            self.log_change(request, email, f"Reprocess: queued {job.type} job #{job.pk}")
            queued += 1
        listing = jobs.admin_list_url(type=job_types.PROCESS_EMAIL, status="queued")
        self.message_user(
            request,
            format_html('Queued {} email(s) for processing: <a href="{}">their jobs</a>.', queued, listing),
            messages.SUCCESS,
        )


def _more(count: int, what: str) -> str:
    return format_html("<p>… and {} more {}.</p>", f"{count:,}", what) if count > 0 else ""


def _job_link(job: Job | int) -> str:
    job_id = job if isinstance(job, int) else job.pk
    try:
        url = jobs.admin_url(job_id)
    except NoReverseMatch:
        return f"#{job_id}"
    return format_html('<a href="{}">#{}</a>', url, job_id)


@admin.register(Attachment)
class AttachmentAdmin(admin.ModelAdmin):
    """All attachments of an email (``?email__id__exact=<id>``), paginated: the email's page
    lists only the first ``PIPELINE_ADMIN_ROWS``. Read-only, like every artifact."""

    list_display = (
        "position",
        "email_link",
        "filename_text",
        "content_type",
        "size",
        "converted",
        "note_text",
    )
    list_display_links = None
    list_per_page = 100
    show_full_result_count = False
    fields = ("email", "position", "filename", "content_type", "size", "converted", "note", "text_preview")
    readonly_fields = fields

    class Media:
        css = {"all": ["pipeline/admin.css"]}

    @admin.display(description="filename", ordering="filename")
    def filename_text(self, obj: Attachment) -> str:
        return format_html('<span class="pl-wrap">{}</span>', obj.filename) if obj.filename else "-"

    @admin.display(description="note")
    def note_text(self, obj: Attachment) -> str:
        return format_html('<span class="pl-wrap">{}</span>', obj.note) if obj.note else "-"

    @admin.display(description="email", ordering="email")
    def email_link(self, obj: Attachment) -> str:
        url = reverse("admin:pipeline_emailmessage_change", args=[obj.email_id])
        return format_html('<a href="{}">#{}</a>', url, obj.email_id)

    @admin.display(description="text")
    def text_preview(self, obj: Attachment) -> str:
        return format_html('<pre class="pl-pre">{}</pre>', obj.text[:5000])

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
    so who/when are recorded (and in the admin log) and switching on queues the sweep."""

    fields = ("enabled", "what_off_means", "changed_by", "changed_at")
    readonly_fields = ("what_off_means", "changed_by", "changed_at")

    @admin.display(description="when off")
    def what_off_means(self, obj: ModelCallSwitch) -> str:
        return (
            "No model is called: new emails are parsed and stop at “parsed”, their runs left "
            "open, waiting. Switching model calls on queues the email sweep at once, which "
            "queues every waiting email again (nothing is lost while they are off)."
        )

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        row = switch.current()
        return HttpResponseRedirect(reverse("admin:pipeline_modelcallswitch_change", args=[row.pk]))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: ModelCallSwitch, form: object, change: bool) -> None:
        was_on = switch.model_calls_enabled()
        updated = switch.set_model_calls(obj.enabled, request.user)
        obj.changed_by, obj.changed_at = updated.changed_by, updated.changed_at
        if updated.enabled and not was_on:
            sweep = jobs.latest_job(job_types.SWEEP_EMAILS)
            if sweep is not None:
                self.message_user(
                    request,
                    format_html(
                        "Model calls are on: the emails that waited are queued again by the sweep, {}.",
                        format_html("{} job {}", sweep.type, _job_link(sweep)),
                    ),
                    messages.SUCCESS,
                )
        elif not updated.enabled and was_on:
            self.message_user(
                request, "Model calls are off: new emails stop at “parsed” and wait.", messages.WARNING
            )
