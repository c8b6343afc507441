"""The failed tries, read-only: the audit trail of every job's errors. Like the jobs list it
fits beside the admin's navigation at 1400 px (filter drop-down above it, long texts
wrapped or clamped), and a try's own page keeps its traceback's indentation."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.db.models.functions import Left
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.admin import try_logs
from jobs.admin.counting import BoundedCountingMixin
from jobs.admin.display import shorten, timestamp
from jobs.admin.filters import OutcomeFilter, OwnFiltersOnlyMixin
from jobs.admin.full_text import ShownText, attempt_text_url, head
from jobs.admin.permissions import ViewJobsPermissionMixin
from jobs.models import JobAttempt


@admin.register(JobAttempt)
class JobAttemptAdmin(ViewJobsPermissionMixin, OwnFiltersOnlyMixin, BoundedCountingMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "job_link",
        "type",
        "attempt",
        "error_class_text",
        "short_error",
        "worker_text",
        "failed_when",
        "outcome",
    )
    list_filter = (OutcomeFilter,)
    change_list_template = "admin/platform/change_list.html"
    change_form_template = "admin/platform/change_form.html"
    fields = (
        "job_link",
        "type",
        "attempt",
        "outcome",
        "worker",
        "started_at",
        "failed_at",
        "error_class",
        "error_text",
        "log_text",
        "traceback_text",
    )
    readonly_fields = ("job_link", "error_text", "log_text", "traceback_text")
    search_fields = ("=job__id",)
    search_help_text = "A job id."
    sortable_by = ()
    ordering = ("-id",)
    actions = None

    def get_queryset(self, request: HttpRequest) -> QuerySet[JobAttempt]:
        """No traceback, and of the error only what its cell shows: a try's texts can be
        megabytes (its own page cuts them and links to the whole)."""
        return (
            super()
            .get_queryset(request)
            .defer("error", "traceback")
            .annotate(error_preview=Left("error", 120))
        )

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> JobAttempt | None:
        """A try's own page: its error and traceback cut in SQL (``full_text``)."""
        if not str(object_id).isdigit():
            return None
        return (
            self.get_queryset(request)
            .annotate(error_head=head("error"), traceback_head=head("traceback"))
            .filter(pk=int(object_id))
            .first()
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[JobAttempt], bool]:
        term = search_term.strip().removeprefix("#")
        if not term:
            return queryset, False
        return (queryset.filter(job_id=int(term)) if term.isdigit() else queryset.none()), False

    @admin.display(description="job")
    def job_link(self, attempt: JobAttempt) -> SafeString:
        return format_html(
            '<a href="{}">#{}</a>',
            reverse("admin:platform_job_change", args=[attempt.job_id]),
            attempt.job_id,
        )

    @admin.display(description="error")
    def short_error(self, attempt: JobAttempt) -> str:
        return shorten(attempt.error_preview, 120)  # type: ignore[attr-defined]  # see get_queryset

    @admin.display(description="error class")
    def error_class_text(self, attempt: JobAttempt) -> SafeString:
        return format_html('<span class="job-wrap">{}</span>', attempt.error_class)

    @admin.display(description="worker")
    def worker_text(self, attempt: JobAttempt) -> SafeString:
        return format_html('<span class="job-wrap">{}</span>', attempt.worker or "—")

    @admin.display(description="failed")
    def failed_when(self, attempt: JobAttempt) -> SafeString | str:
        return timestamp(attempt.failed_at, timezone.now())

    # --- a try's own page: its texts as written (cut, with a link to the whole), indentation kept

    @admin.display(description="error")
    def error_text(self, attempt: JobAttempt) -> SafeString | str:
        return self._shown(attempt, "error", attempt.error_head)  # type: ignore[attr-defined]  # see get_object

    @admin.display(description="logged before")
    def log_text(self, attempt: JobAttempt) -> SafeString | str:
        """The last lines the try's handler logged before the error (``jobs.try_log``)."""
        tail = try_logs.tail_of(attempt)
        return format_html('<pre class="job-pre job-log">{}</pre>', tail) if tail else "—"

    @admin.display(description="traceback")
    def traceback_text(self, attempt: JobAttempt) -> SafeString | str:
        return self._shown(attempt, "traceback", attempt.traceback_head)  # type: ignore[attr-defined]

    def _shown(self, attempt: JobAttempt, part: str, text: str) -> SafeString | str:
        if not text:
            return "—"
        return ShownText.of(text, attempt_text_url(attempt.job_id, attempt.pk, part)).html()
