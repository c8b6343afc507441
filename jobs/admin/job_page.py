"""The "Background jobs" page: the Job changelist, built for an operator at 2 a.m., and a
job's own page.

Above the tiles, a warning for each queue with due jobs that no live worker serves, a note
for each paused queue with due jobs, and a line per queue (``jobs.coverage``) with its
limits and its Pause or Resume button (``flow_page``), and one for each timer that missed its runs
(``jobs.timetable.health``); four tiles over the newest jobs; the list refreshes
itself in place every few seconds while anything is queued or running (see
``change_list.html``). Searching is by id or exact
dedupe key, both index lookups. Counting is bounded (``counting``), Retry and Cancel go
through the engine (``operations``). The list reads no payload and only the start of each
error; a job's page cuts its long texts and links to the whole (``full_text``); the URL may
set only the page's own filters (``filters.OwnFiltersOnlyMixin``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.db.models.functions import Left
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs import coverage, registry
from jobs.admin import charts, counting, flow_page, try_logs
from jobs.admin.bulk_page import BulkMatchingMixin
from jobs.admin.counting import BoundedCountingMixin, Tile, status_counts
from jobs.admin.display import (
    ERROR_TITLE_CHARS,
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
from jobs.admin.filters import IdOrKeySearchMixin, OwnFiltersOnlyMixin, QueueFilter, StatusFilter, TypeFilter
from jobs.admin.full_text import FullTextMixin, ShownText, attempt_text_url, head, job_text_url
from jobs.admin.job_records import JobRecordsMixin
from jobs.admin.links import registered_links
from jobs.admin.operations import RetryCancelMixin
from jobs.admin.permissions import ViewJobsPermissionMixin
from jobs.admin.workflow_page import workflow_link
from jobs.flow import queues as flow_queues
from jobs.flow.queues import QueueLimits
from jobs.models import Job, JobAttempt, Status
from jobs.timetable import health


@dataclass(frozen=True)
class QueueLine:
    """One queue's line above the tiles: how it is served, and its limits and pause."""

    state: coverage.QueueState
    limits: QueueLimits | None


#: The refresh asks for the same URL with this header and gets only the live parts back.
REFRESH_HEADER = "X-Jobs-Refresh"
REFRESH_SECONDS = 3


@admin.register(Job)
class JobAdmin(
    ViewJobsPermissionMixin,
    OwnFiltersOnlyMixin,
    IdOrKeySearchMixin,
    BoundedCountingMixin,
    FullTextMixin,
    JobRecordsMixin,
    BulkMatchingMixin,
    RetryCancelMixin,
):
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
                    "workflow",
                    "queue",
                    "priority_text",
                    "status_badge",
                    "message",
                    "operator_actions",
                    "dedupe_key",
                )
            },
        ),
        ("Progress", {"fields": ("progress_text", "error_text", "attempts_cell")}),
        ("Worker", {"fields": ("locked_by", "heartbeat")}),
        ("Timestamps", {"fields": ("created", "due", "started", "finished", "took", "dismissed")}),
        ("Payload", {"fields": ("payload_text", "result_text")}),
    )
    readonly_fields = (
        "priority_text",
        "records",
        "workflow",
        "operator_actions",
        "status_badge",
        "progress_text",
        "error_text",
        "attempts_cell",
        "took",
        "payload_text",
        "result_text",
        "heartbeat",
        "created",
        "due",
        "started",
        "finished",
        "dismissed",
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

    # --- what is read -----------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        """The list (and its refresh every 3 s): no payload, and of the error only what its
        cell's title shows, cut in SQL."""
        return (
            super()
            .get_queryset(request)
            .defer("payload", "error", "result")
            .annotate(error_preview=Left("error", ERROR_TITLE_CHARS))
        )

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Job | None:
        """A job's page: its payload and error cut in SQL (``full_text``)."""
        if not str(object_id).isdigit():
            return None
        return (
            self.get_queryset(request)
            .annotate(payload_head=head("payload"), error_head=head("error"), result_head=head("result"))
            .filter(pk=int(object_id))
            .first()
        )

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
        queues = coverage.queue_states()
        limits = flow_queues.current()
        context = {
            "queue_lines": [QueueLine(state, limits.get(state.queue)) for state in queues],
            "unserved_queues": coverage.unserved(queues),
            "paused_queues": [state for state in queues if state.paused and state.due],
            "can_change_queues": flow_page.can_change(request.user),
            "flow_url": reverse("admin:platform_queue_changelist"),
            "overdue_timers": health.overdue(health.timer_states()),
            "timers_url": reverse("admin:platform_timer_changelist"),
            "queue_url": f"{url}?status={Status.QUEUED}&queue=",
            "tiles": tiles,
            "charts": charts.charts_for(self._charted_queue(request)),
            "bulk_filter": self._bulk_filter(request),
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
            # The refresh gets only the queues, the tiles, the rows and the pagination.
            response.template_name = "admin/platform/job/change_list_refresh.html"
        patch_vary_headers(response, [REFRESH_HEADER])
        return response

    def _bulk_filter(self, request: HttpRequest) -> dict[str, str] | None:
        """On the failed list, for an operator: the list's queue and type, which Retry all /
        Dismiss all matching start from (``bulk_page``)."""
        if request.GET.get("status") != Status.FAILED or not self.has_operate_permission(request):
            return None
        return {name: request.GET.get(name, "") for name in ("queue", "type")}

    @staticmethod
    def _charted_queue(request: HttpRequest) -> str | None:
        """The queue the list is filtered by, if it names one the engine knows: its charts."""
        queue = request.GET.get("queue")
        return queue if queue in registry.queues() else None

    @admin.display(description="status")
    def status_badge(self, job: Job) -> SafeString:
        return status_badge(job.status)

    @admin.display(description="progress")
    def progress_cell(self, job: Job) -> SafeString | str:
        """The live percentage and message; the error when it failed or waits for a retry."""
        error = job.error_preview  # type: ignore[attr-defined]  # annotated by get_queryset
        if shows_error(job, error):
            # Clamped to two lines by the page's style; more of the error is in the title.
            return format_html(
                '<span class="job-error job-clamp" title="{}">{}</span>',
                error,
                shorten(error or job.message),
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

    @admin.display(description="workflow")
    def workflow(self, job: Job) -> SafeString | str:
        """A workflow step's job links its workflow."""
        return workflow_link(job)

    @admin.display(description="priority")
    def priority_text(self, job: Job) -> str:
        """A named priority, or a django.tasks task's own (higher runs first)."""
        return job.priority_name

    @admin.display(description="error")
    def error_text(self, job: Job) -> SafeString | str:
        error = job.error_head  # type: ignore[attr-defined]  # annotated by get_object
        return ShownText.of(error, job_text_url(job.pk, "error")).html() if error else "—"

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

    @admin.display(description="dismissed")
    def dismissed(self, job: Job) -> SafeString | str:
        return exact_timestamp(job.dismissed_at)

    @admin.display(description="payload")
    def payload_text(self, job: Job) -> SafeString:
        text = job.payload_head  # type: ignore[attr-defined]  # jsonb's text, annotated by get_object
        shown = ShownText.of(text, job_text_url(job.pk, "payload"))
        if not shown.cut:  # the whole payload was read: shown pretty, unless that is too long
            shown = ShownText.of(json.dumps(json.loads(text), indent=2, sort_keys=True), shown.url)
        return shown.html()

    @admin.display(description="result")
    def result_text(self, job: Job) -> SafeString | str:
        """What a django.tasks task returned (cut like the payload); jobs keep no result."""
        text = job.result_head  # type: ignore[attr-defined]  # jsonb's text, annotated by get_object
        if text is None:
            return "—"
        shown = ShownText.of(text, job_text_url(job.pk, "result"))
        if not shown.cut:
            shown = ShownText.of(json.dumps(json.loads(text), indent=2, sort_keys=True), shown.url)
        return shown.html()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        attempts = self._failed_attempts(object_id)
        job = self.get_object(request, object_id) if str(object_id).isdigit() else None
        logs = try_logs.logs_of(job) if job is not None else []
        try_logs.attach(attempts, logs)
        context = {
            "failed_attempts": attempts,
            "try_logs": logs,
            "job_running": job is not None and job.status == Status.RUNNING,
            "live_progress": self.progress_text(job) if job is not None else "",
            "refresh_header": REFRESH_HEADER,
            "refresh_ms": REFRESH_SECONDS * 1000,
            "can_operate": self.has_operate_permission(request),
            **(extra_context or {}),
        }
        response = super().change_view(request, object_id, form_url, context)
        if request.headers.get(REFRESH_HEADER) and isinstance(response, TemplateResponse):
            # A running job's page refreshes its progress and its tries' logs in place.
            response.template_name = "admin/platform/observe/job_refresh.html"
        patch_vary_headers(response, [REFRESH_HEADER])
        return response

    def _failed_attempts(self, object_id: str) -> list[JobAttempt]:
        """Each try with its error and traceback cut in SQL, as ``shown_error`` and
        ``shown_traceback`` (``full_text.ShownText``)."""
        if not str(object_id).isdigit():
            return []
        attempts: list[JobAttempt] = list(
            JobAttempt.objects.filter(job_id=int(object_id))
            .defer("error", "traceback")
            .annotate(error_head=head("error"), traceback_head=head("traceback"))
            .order_by("attempt", "id")
        )
        for attempt in attempts:
            for part in ("error", "traceback"):
                text = getattr(attempt, f"{part}_head")
                url = attempt_text_url(attempt.job_id, attempt.pk, part)
                setattr(attempt, f"shown_{part}", ShownText.of(text, url))
        return attempts
