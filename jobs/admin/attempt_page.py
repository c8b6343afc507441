"""The failed tries, read-only: the audit trail of every job's errors."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.db.models.functions import Left
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.admin.counting import BoundedCountingMixin
from jobs.admin.display import shorten
from jobs.admin.filters import OutcomeFilter, OwnFiltersOnlyMixin
from jobs.admin.permissions import ViewJobsPermissionMixin
from jobs.models import JobAttempt


@admin.register(JobAttempt)
class JobAttemptAdmin(ViewJobsPermissionMixin, OwnFiltersOnlyMixin, BoundedCountingMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "job_link",
        "type",
        "attempt",
        "error_class",
        "short_error",
        "worker",
        "failed_at",
        "outcome",
    )
    list_filter = (OutcomeFilter,)
    search_fields = ("=job__id",)
    search_help_text = "A job id."
    sortable_by = ()
    ordering = ("-id",)
    actions = None

    def get_queryset(self, request: HttpRequest) -> QuerySet[JobAttempt]:
        """No traceback, and of the error only what its cell shows: a try's texts can be
        megabytes (a job's page links to the whole)."""
        return (
            super()
            .get_queryset(request)
            .defer("error", "traceback")
            .annotate(error_preview=Left("error", 120))
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
