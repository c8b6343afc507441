"""The "Background jobs" page: the Job changelist, built for an operator at 2 a.m., and a
job's own page.

Four tiles over the newest jobs; the list refreshes itself in place every few seconds
while anything is queued or running (see ``change_list.html``). Searching is by id or exact
dedupe key, both index lookups. Counting is bounded (``counting``), Retry and Cancel go
through the engine (``operations``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.admin import counting
from jobs.admin.counting import BoundedCountingMixin, Tile, status_counts
from jobs.admin.display import (
    action_button,
    exact_timestamp,
    format_duration,
    job_moment,
    local_time,
    shorten,
    shows_error,
    status_badge,
    waiting_for_retry,
)
from jobs.admin.filters import QueueFilter, StatusFilter, TypeFilter
from jobs.admin.job_records import JobRecordsMixin
from jobs.admin.links import registered_links
from jobs.admin.operations import RetryCancelMixin
from jobs.admin.permissions import ViewJobsPermissionMixin
from jobs.models import Job, JobAttempt, Status

#: The refresh asks for the same URL with this header and gets only the live parts back.
REFRESH_HEADER = "X-Jobs-Refresh"
REFRESH_SECONDS = 3


@admin.register(Job)
class JobAdmin(ViewJobsPermissionMixin, BoundedCountingMixin, JobRecordsMixin, RetryCancelMixin):
    list_display = (
        "id",
        "type_and_records",
        "queue",
        "status_badge",
        "progress_cell",
        "attempts_cell",
        "took",
        "when",
    )
    list_display_links = ("id",)  # and the type, which links its records too
    list_filter = (StatusFilter, QueueFilter, TypeFilter)
    # Sorting by a column would defeat the (status, id) and primary-key indexes.
    sortable_by = ()
    ordering = ("-id",)
    search_fields = ("dedupe_key",)
    search_help_text = "A job id (e.g. 1234) or an exact dedupe key."
    list_per_page = 50
    list_max_show_all = 200
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "type",
                    "records",
                    "queue",
                    "priority",
                    "status_badge",
                    "message",
                    "operator_actions",
                    "dedupe_key",
                )
            },
        ),
        ("Progress", {"fields": ("progress_text", "error_text", "attempts_cell")}),
        ("Worker", {"fields": ("locked_by", "heartbeat")}),
        ("Timestamps", {"fields": ("created", "due", "started", "finished", "took")}),
        ("Payload", {"fields": ("payload_text",)}),
    )
    readonly_fields = (
        "records",
        "operator_actions",
        "status_badge",
        "progress_text",
        "error_text",
        "attempts_cell",
        "took",
        "payload_text",
        "heartbeat",
        "created",
        "due",
        "started",
        "finished",
    )

    def get_list_display(self, request: HttpRequest) -> tuple[str, ...]:
        if self.has_operate_permission(request):
            return (*self.list_display, "row_actions")
        return self.list_display

    @property
    def media(self) -> forms.Media:
        # The pages are read-only: Django's core scripts, without its form helpers and
        # without actions.js, which binds the checkboxes once; the live refresh swaps the
        # rows, so the page's own script (change_list.html) handles the selection.
        extra = "" if settings.DEBUG else ".min"
        return forms.Media(
            js=[f"admin/js/vendor/jquery/jquery{extra}.js", "admin/js/jquery.init.js", "admin/js/core.js"]
        )

    # --- search ---------------------------------------------------------------------------

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Job], bool]:
        """By id or exact dedupe key: both are index lookups, never a LIKE over a million rows."""
        term = search_term.strip()
        if not term:
            return queryset, False
        match = Q(dedupe_key=term)
        number = term.removeprefix("#")
        if number.isdigit() and int(number) < 2**63:
            match |= Q(pk=int(number))
        return queryset.filter(match), False

    # --- the list -------------------------------------------------------------------------

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        counts = status_counts()
        active = counts[Status.QUEUED].count > 0 or counts[Status.RUNNING].count > 0
        only_status = set(request.GET) <= {"status"}
        url = reverse("admin:platform_job_changelist")
        tiles = [
            Tile(
                counted,
                f"{url}?{urlencode({'status': status})}",
                selected=only_status and request.GET.get("status") == status,
            )
            for status, counted in counts.items()
        ]
        context = {
            "tiles": tiles,
            "live": active,
            "refresh_ms": REFRESH_SECONDS * 1000,
            "refresh_seconds": REFRESH_SECONDS,
            "refresh_header": REFRESH_HEADER,
            "exact_up_to": f"{counting.EXACT_UP_TO:,}",
            "page_links": registered_links(),
            "can_operate": self.has_operate_permission(request),
            "title": "Background jobs",
            **(extra_context or {}),
        }
        response = super().changelist_view(request, context)
        if request.headers.get(REFRESH_HEADER) and isinstance(response, TemplateResponse):
            # The refresh gets only the tiles, the rows and the pagination, filtered alike.
            response.template_name = "admin/platform/job/change_list_refresh.html"
        patch_vary_headers(response, [REFRESH_HEADER])
        return response

    @admin.display(description="status")
    def status_badge(self, job: Job) -> SafeString:
        return status_badge(job.status)

    @admin.display(description="progress")
    def progress_cell(self, job: Job) -> SafeString | str:
        """The live percentage and message; the error when it failed or waits for a retry."""
        if shows_error(job):
            # Clamped to two lines by the page's style; the whole error is in the title.
            return format_html(
                '<span class="job-error job-clamp" title="{}">{}</span>',
                job.error,
                shorten(job.error or job.message),
            )
        return self.progress_text(job)

    @admin.display(description="progress")
    def progress_text(self, job: Job) -> SafeString | str:
        """The percentage and message only: a job's page shows its error once, below."""
        if job.status == Status.RUNNING:
            percent = job.progress or 0
            return format_html(
                '<span class="job-progress"><progress max="100" value="{}"></progress> '
                '<span class="job-percent">{} %</span> '
                '<span class="job-progress-message" title="{}">{}</span></span>',
                percent,
                percent,
                job.progress_message,
                job.progress_message,
            )
        if job.status == Status.SUCCEEDED:
            return format_html('<span class="job-percent">100 %</span> {}', job.progress_message)
        return format_html('<span class="quiet">{}</span>', job.message) if job.message else "—"

    @admin.display(description="attempts")
    def attempts_cell(self, job: Job) -> SafeString:
        if not waiting_for_retry(job):
            return format_html("{}/{}", job.attempts, job.max_attempts)
        # When it runs again is the row's "when"; the exact time is in the title.
        return format_html(
            '<span class="job-retry" title="runs again at {}">retry {}/{}</span>',
            local_time(job.run_at),
            job.attempts,
            job.max_attempts,
        )

    @admin.display(description="took")
    def took(self, job: Job) -> str:
        if job.started_at and job.finished_at:
            return format_duration(job.finished_at - job.started_at)
        if job.status == Status.RUNNING and job.started_at:
            return f"{format_duration(timezone.now() - job.started_at)} so far"
        return "—"

    @admin.display(description="when")
    def when(self, job: Job) -> SafeString | str:
        """The moment that matters for its status: finished, started, due, or its next try."""
        return job_moment(job, timezone.now())

    @admin.display(description="", empty_value="")
    def row_actions(self, job: Job) -> SafeString | str:
        """Retry on failed jobs, Cancel on queued ones; other rows leave the cell empty."""
        if job.status == Status.FAILED:
            return action_button(job, "retry", "Retry")
        if job.status == Status.QUEUED:
            return action_button(job, "cancel", "Cancel")
        return ""

    # --- the job's own page ----------------------------------------------------------------

    @admin.display(description="error")
    def error_text(self, job: Job) -> SafeString | str:
        return format_html('<pre class="job-pre">{}</pre>', job.error) if job.error else "—"

    @admin.display(description="last heartbeat")
    def heartbeat(self, job: Job) -> SafeString | str:
        return exact_timestamp(job.heartbeat_at)

    @admin.display(description="created")
    def created(self, job: Job) -> SafeString | str:
        return exact_timestamp(job.created_at)

    @admin.display(description="run at (due)")
    def due(self, job: Job) -> SafeString | str:
        return exact_timestamp(job.run_at)

    @admin.display(description="started")
    def started(self, job: Job) -> SafeString | str:
        return exact_timestamp(job.started_at)

    @admin.display(description="finished")
    def finished(self, job: Job) -> SafeString | str:
        return exact_timestamp(job.finished_at)

    @admin.display(description="payload")
    def payload_text(self, job: Job) -> SafeString:
        return format_html('<pre class="job-pre">{}</pre>', json.dumps(job.payload, indent=2, sort_keys=True))

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {
            "failed_attempts": JobAttempt.objects.filter(job_id=object_id).order_by("attempt", "id")
            if str(object_id).isdigit()
            else [],
            "can_operate": self.has_operate_permission(request),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)
