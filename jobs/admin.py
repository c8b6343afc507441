"""The "Background jobs" admin page: the Job changelist, built for an operator at 2 a.m.

Seeing it needs ``platform.view_jobs``; Retry and Cancel also need ``platform.change_job``
and only ever call ``jobs.store.retry`` / ``jobs.store.cancel``, which hold the rules. The
admin's generic edit, add and delete are off: a saved form would overwrite what a worker
wrote to the row in the meantime.

The page must answer in well under 300 ms with a million jobs, every 3 seconds while the
system is busy, so nothing here counts the whole table: the tiles count exactly up to
``EXACT_UP_TO`` rows through indexes and estimate beyond that, and the paginator counts no
further than that either (see ``bench/admin_page.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.decorators import method_decorator
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from jobs import registry, store
from jobs.errors import InvalidTransition
from jobs.models import Job, JobAttempt, Status, Worker

VIEW_PERMISSION = "platform.view_jobs"
CHANGE_PERMISSION = "platform.change_job"

#: Counts (tiles, paginator) are exact up to this many rows; beyond it they are estimated
#: (tiles) or shown as "more than" (list), so no request walks a million index entries.
EXACT_UP_TO = 10_000
#: The refresh asks for the same URL with this header and gets only the live parts back.
REFRESH_HEADER = "X-Jobs-Refresh"
REFRESH_SECONDS = 3
#: A bulk action handles at most this many jobs: each goes through the engine one by one.
BULK_LIMIT = 1_000
TILE_STATUSES = (Status.QUEUED, Status.RUNNING, Status.SUCCEEDED, Status.FAILED)


def can_view(user: Any) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION))


def can_operate(user: Any) -> bool:
    """Retry and Cancel change data: they need the change permission on top of viewing."""
    return can_view(user) and bool(user.has_perm(CHANGE_PERMISSION))


# --- counting without counting a million rows ---------------------------------------------


@dataclass(frozen=True)
class StatusCount:
    status: str
    count: int
    exact: bool

    @property
    def figure(self) -> str:
        if self.exact:
            return f"{self.count:,}"
        if self.count <= EXACT_UP_TO:  # statistics lag behind: all we know is "more than"
            return f"{EXACT_UP_TO:,}+"
        digits = max(len(str(self.count)) - 3, 0)  # three significant digits
        return f"≈ {round(self.count, -digits):,}"

    @property
    def caption(self) -> str:
        return "exact count" if self.exact else "estimate"

    @property
    def explanation(self) -> str:
        if self.exact:
            return f"Counted exactly: {self.count:,} {self.status} jobs (exact up to {EXACT_UP_TO:,})."
        return (
            f"More than {EXACT_UP_TO:,} {self.status} jobs: the figure is PostgreSQL's estimate "
            "from its table statistics, not a count."
        )


def status_counts(statuses: Iterable[str] = TILE_STATUSES) -> dict[str, StatusCount]:
    """Per status: an exact count up to ``EXACT_UP_TO``, the planner's estimate above it.

    Each bounded count stops after ``EXACT_UP_TO + 1`` rows: PostgreSQL reads them from an
    partial index (``jobs_rare_status``, or the claim and running indexes) or, for
    the status that fills most of the table, from the first pages of the table itself. So a
    million succeeded jobs cost what ten thousand do: about 5 ms (bench/admin_page.py).
    """
    counts: dict[str, StatusCount] = {}
    for status in statuses:
        bounded = Job.objects.filter(status=status).order_by()[: EXACT_UP_TO + 1].count()
        if bounded <= EXACT_UP_TO:
            counts[status] = StatusCount(status, bounded, exact=True)
        else:
            counts[status] = StatusCount(status, _estimate(status), exact=False)
    return counts


def _estimate(status: str) -> int:
    """The planner's row estimate for one status (from pg_statistic), or 0 elsewhere."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {Job._meta.db_table} WHERE status = %s", [status]
        )
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


@dataclass(frozen=True)
class Tile:
    counted: StatusCount
    url: str
    selected: bool

    @property
    def status(self) -> str:
        return self.counted.status


class BoundedPaginator(Paginator):
    """Counts at most ``EXACT_UP_TO + 1`` rows: paging the newest jobs must not count all.

    It first reads the page about to be shown plus one row. When that is the last page, its
    rows give the count, so a filter that matches a few rows (or none) costs one scan, not
    a scan to list and another to count.
    """

    def __init__(
        self, object_list: Any, per_page: int, *args: Any, page_number: int = 1, **kwargs: Any
    ) -> None:
        super().__init__(object_list, per_page, *args, **kwargs)
        self.page_number = page_number
        self.page_rows: list[Any] | None = None

    @cached_property
    def count(self) -> int:
        bottom = (self.page_number - 1) * self.per_page
        if bottom > EXACT_UP_TO:  # past the last page that can be paged to: don't read it
            return self.object_list.order_by()[: EXACT_UP_TO + 1].count()
        window = list(self.object_list[bottom : bottom + self.per_page + 1])
        if len(window) <= self.per_page and (window or bottom == 0):
            self.page_rows = window  # the last page: nothing follows it
            return bottom + len(window)
        self.page_rows = window[: self.per_page] if window else None
        return self.object_list.order_by()[: EXACT_UP_TO + 1].count()

    def page(self, number: Any) -> Any:
        number = self.validate_number(number)
        if number == self.page_number and self.page_rows is not None:
            return self._get_page(self.page_rows, number, self)
        return super().page(number)


class JobChangeList(ChangeList):
    """The admin's changelist, told that its count may be a lower bound."""

    count_is_bounded = False

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        rows = getattr(self.paginator, "page_rows", None)
        if rows is not None and not self.multi_page and not self.show_all:
            self.result_list = rows  # already read while counting: don't run the query again
        self.count_is_bounded = (
            isinstance(self.paginator, BoundedPaginator) and self.result_count > EXACT_UP_TO
        )

    @property
    def count_label(self) -> str:
        if self.count_is_bounded:
            return f"more than {EXACT_UP_TO:,}"
        return f"{self.result_count:,}"


# --- filters and search -------------------------------------------------------------------


class _ChoiceFilter(admin.SimpleListFilter):
    """A filter whose choices come from the registry, never from SELECT DISTINCT on the table."""

    field = ""

    def choices_from(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        choices = self.choices_from()
        value = self.value()
        if value and value not in {key for key, _ in choices}:
            choices.append((value, value))  # e.g. a retired type still in old rows
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        value = self.value()
        return queryset.filter(**{self.field: value}) if value else queryset


class StatusFilter(_ChoiceFilter):
    title = "status"
    parameter_name = field = "status"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(value, label) for value, label in Status.choices]


class QueueFilter(_ChoiceFilter):
    title = "queue"
    parameter_name = field = "queue"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(queue, queue) for queue in registry.queues()]


class TypeFilter(_ChoiceFilter):
    title = "type"
    parameter_name = field = "type"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(job_type.name, job_type.name) for job_type in registry.all_types()]


# --- formatting ---------------------------------------------------------------------------


def format_duration(delta: timedelta) -> str:
    seconds = max(delta.total_seconds(), 0.0)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{int(seconds)} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} days"


def relative(moment: datetime, now: datetime) -> str:
    """``3 min ago`` or ``in 2 min``: what an operator reads at a glance."""
    delta = moment - now
    if abs(delta.total_seconds()) < 1:
        return "now"
    if delta.total_seconds() > 0:
        return f"in {format_duration(delta)}"
    return f"{format_duration(-delta)} ago"


def timestamp(moment: datetime | None, now: datetime, prefix: str = "") -> SafeString | str:
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return format_html(
        '<time datetime="{}" title="{}">{}{}</time>',
        local.isoformat(),
        local.strftime("%Y-%m-%d %H:%M:%S %Z"),
        prefix,
        relative(moment, now),
    )


def exact_timestamp(moment: datetime | None) -> SafeString | str:
    """To the second, with how long ago: a job's own page is where times get compared."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return format_html(
        '<time datetime="{}">{}</time> <span class="quiet">({})</span>',
        local.isoformat(),
        local.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + local.strftime(" %Z"),
        relative(moment, timezone.now()),
    )


def waiting_for_retry(job: Job) -> bool:
    """Queued again after a failed try (or a lost worker): it has used up attempts."""
    return job.status == Status.QUEUED and job.attempts > 0


# --- the page -------------------------------------------------------------------------------


class ViewJobsPermissionMixin:
    """Every page of the section is read-only and gated by ``platform.view_jobs``."""

    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    def get_paginator(
        self, request: HttpRequest, queryset: QuerySet, per_page: int, **kwargs: Any
    ) -> Paginator:
        try:
            page_number = max(int(request.GET.get("p", 1)), 1)
        except ValueError:
            page_number = 1
        return BoundedPaginator(queryset, per_page, page_number=page_number, **kwargs)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return can_view(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_view(request.user)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ViewJobsPermissionMixin, admin.ModelAdmin):
    list_display = ("id", "type", "queue", "status_badge", "progress_cell", "attempts_cell", "took", "when")
    list_display_links = ("id", "type")
    list_filter = (StatusFilter, QueueFilter, TypeFilter)
    # Sorting by a column would defeat the (status, id) and primary-key indexes.
    sortable_by = ()
    ordering = ("-id",)
    search_fields = ("dedupe_key",)
    search_help_text = "A job id (e.g. 1234) or an exact dedupe key."
    list_per_page = 50
    list_max_show_all = 200
    actions = ("retry_selected", "cancel_selected")
    fieldsets = (
        (None, {"fields": ("type", "queue", "priority", "status_badge", "message", "dedupe_key")}),
        ("Progress", {"fields": ("progress_cell", "error_text", "attempts_cell")}),
        ("Worker", {"fields": ("locked_by", "heartbeat")}),
        ("Timestamps", {"fields": ("created", "due", "started", "finished", "took")}),
        ("Payload", {"fields": ("payload_text",)}),
    )
    readonly_fields = (
        "status_badge",
        "progress_cell",
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

    # --- permissions and URLs -----------------------------------------------------------

    def has_operate_permission(self, request: HttpRequest) -> bool:
        return can_operate(request.user)

    def get_list_display(self, request: HttpRequest) -> tuple[str, ...]:
        if self.has_operate_permission(request):
            return (*self.list_display, "row_actions")
        return self.list_display

    @property
    def media(self) -> forms.Media:
        # Django's actions.js binds the checkboxes once; the live refresh swaps the rows, so
        # the page's own script (change_list.html) handles the selection by delegation.
        scripts = super().media._js
        return forms.Media(
            js=[js for js in scripts if not str(getattr(js, "_path", js)).endswith("/actions.js")]
        )

    def get_urls(self) -> list:
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view  # login, staff check and CSRF protection
        return [
            path("<int:object_id>/retry/", wrap(self.retry_view), name="{}_{}_retry".format(*info)),
            path("<int:object_id>/cancel/", wrap(self.cancel_view), name="{}_{}_cancel".format(*info)),
            *super().get_urls(),
        ]

    # --- search ---------------------------------------------------------------------------

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Job], search_term: str
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
        mail_queue = getattr(settings, "JOBS_MAIL_QUEUE", "mail")
        context = {
            "tiles": tiles,
            "live": active,
            "refresh_ms": REFRESH_SECONDS * 1000,
            "refresh_seconds": REFRESH_SECONDS,
            "refresh_header": REFRESH_HEADER,
            "exact_up_to": f"{EXACT_UP_TO:,}",
            "mail_queue": mail_queue,
            "mail_failed_url": f"{url}?{urlencode({'status': Status.FAILED, 'queue': mail_queue})}",
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
        return format_html('<span class="job-status job-status--{}">{}</span>', job.status, job.status)

    @admin.display(description="progress")
    def progress_cell(self, job: Job) -> SafeString | str:
        """The live percentage and message; the error when it failed or waits for a retry."""
        if job.status == Status.FAILED or (waiting_for_retry(job) and job.error):
            return format_html(
                '<span class="job-error" title="{}">{}</span>', job.error, _shorten(job.error or job.message)
            )
        if job.status == Status.RUNNING:
            percent = job.progress or 0
            return format_html(
                '<span class="job-progress"><progress max="100" value="{}"></progress> '
                '<span class="job-percent">{} %</span> <span class="job-progress-message">{}</span></span>',
                percent,
                percent,
                job.progress_message,
            )
        if job.status == Status.SUCCEEDED:
            return format_html('<span class="job-percent">100 %</span> {}', job.progress_message)
        return format_html('<span class="quiet">{}</span>', job.message) if job.message else "—"

    @admin.display(description="attempts")
    def attempts_cell(self, job: Job) -> SafeString:
        if not waiting_for_retry(job):
            return format_html("{}/{}", job.attempts, job.max_attempts)
        now = timezone.now()
        when = "due now" if job.run_at <= now else f"runs again {relative(job.run_at, now)}"
        return format_html(
            '<span class="job-retry">retry {}/{}</span><br><span class="quiet" title="{}">{}</span>',
            job.attempts,
            job.max_attempts,
            timezone.localtime(job.run_at).strftime("%Y-%m-%d %H:%M:%S %Z"),
            when,
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
        """The moment that matters for its status: finished, started, or due."""
        now = timezone.now()
        if job.finished_at:
            return timestamp(job.finished_at, now, "finished ")
        if job.status == Status.RUNNING:
            return timestamp(job.started_at, now, "started ")
        if job.run_at > now:
            return timestamp(job.run_at, now, "due ")
        return timestamp(job.created_at, now, "queued ")

    @admin.display(description="")
    def row_actions(self, job: Job) -> SafeString | str:
        """Retry on failed jobs, Cancel on queued ones: buttons of the page's hidden POST form."""
        if job.status == Status.FAILED:
            return _action_button(job, "retry", "Retry")
        if job.status == Status.QUEUED:
            return _action_button(job, "cancel", "Cancel")
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

    # --- Retry and Cancel -----------------------------------------------------------------

    @method_decorator(require_POST)
    def retry_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.retry, "Job #{} is queued again.")

    @method_decorator(require_POST)
    def cancel_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.cancel, "Job #{} is cancelled.")

    def _operate(
        self, request: HttpRequest, object_id: int, verb: Callable[[int], Job], done: str
    ) -> HttpResponse:
        if not self.has_operate_permission(request):
            raise PermissionDenied
        get_object_or_404(Job.objects.only("pk"), pk=object_id)
        try:
            verb(object_id)
        except InvalidTransition as exc:  # it changed state since the page was drawn
            self.message_user(request, str(exc), messages.ERROR)
        except Job.DoesNotExist:
            raise Http404(f"Job #{object_id} no longer exists.") from None
        else:
            self.message_user(request, done.format(object_id), messages.SUCCESS)
        return HttpResponseRedirect(self._next_url(request, object_id))

    def _next_url(self, request: HttpRequest, object_id: int) -> str:
        target = request.POST.get("next", "")
        if target and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            return target
        return reverse("admin:platform_job_change", args=[object_id])

    @admin.action(description="Retry selected failed jobs", permissions=["operate"])
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._bulk(request, queryset, store.retry, "queued again")

    @admin.action(description="Cancel selected queued jobs", permissions=["operate"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._bulk(request, queryset, store.cancel, "cancelled")

    def _bulk(
        self, request: HttpRequest, queryset: QuerySet[Job], verb: Callable[[int], Job], done: str
    ) -> None:
        """One engine call per job, so every rule and its error message stay in the engine."""
        ids = list(queryset.order_by("-id").values_list("pk", flat=True)[: BULK_LIMIT + 1])
        if len(ids) > BULK_LIMIT:
            ids = ids[:BULK_LIMIT]
            self.message_user(
                request,
                f"Only the newest {BULK_LIMIT:,} selected jobs were handled; run the action again for the rest.",
                messages.WARNING,
            )
        changed, refused = 0, []
        for job_id in ids:
            try:
                verb(job_id)
                changed += 1
            except InvalidTransition as exc:
                refused.append(str(exc))
            except Job.DoesNotExist:
                refused.append(f"Job #{job_id} no longer exists.")
        if changed:
            self.message_user(
                request, f"{changed} job{'s' if changed != 1 else ''} {done}.", messages.SUCCESS
            )
        for text in refused[:5]:
            self.message_user(request, text, messages.ERROR)
        if len(refused) > 5:
            self.message_user(request, f"… and {len(refused) - 5} more jobs left unchanged.", messages.ERROR)


def _action_button(job: Job, verb: str, label: str) -> SafeString:
    return format_html(
        '<button type="submit" class="button job-action job-action--{}" form="job-row-action" '
        'formaction="{}" data-job="{}">{}</button>',
        verb,
        reverse(f"admin:platform_job_{verb}", args=[job.pk]),
        job.pk,
        label,
    )


def _shorten(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the audit trail and the worker registry, read-only -------------------------------------


class OutcomeFilter(_ChoiceFilter):
    title = "what followed"
    parameter_name = field = "outcome"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(Status.QUEUED, "queued again (retry)"), (Status.FAILED, "failed for good")]


@admin.register(JobAttempt)
class JobAttemptAdmin(ViewJobsPermissionMixin, admin.ModelAdmin):
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

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[JobAttempt], search_term: str
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
        return _shorten(attempt.error, 120)


@admin.register(Worker)
class WorkerAdmin(ViewJobsPermissionMixin, admin.ModelAdmin):
    list_display = ("name", "host", "pid", "queues", "started_at", "last_seen", "state")
    search_fields = ("name", "host")
    ordering = ("-last_seen",)
    actions = None

    @admin.display(description="state")
    def state(self, worker: Worker) -> str:
        if worker.stopped_at:
            return "stopped"
        lease = timedelta(seconds=settings.JOBS_WORKER_LEASE)
        return "alive" if worker.last_seen >= timezone.now() - lease else "silent"
