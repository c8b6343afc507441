"""The Workflows page (Platform → Workflows): each workflow's name, status, steps done and
times; a workflow's page draws its steps as a graph (``workflow_graph``), each step with
its status, attempts and a link to its job, and offers Retry (a failed workflow: its
failed steps' jobs queued again, so it resumes where it stopped) and Cancel (a running or
failed one: its waiting steps and queued jobs; a running step is waited out).

Seeing it needs ``platform.view_jobs``; Retry and Cancel also need
``platform.change_workflow``, go through ``jobs.workflow.progress`` and are written to the
admin log (the workflow's History), which the page reads back: "Cancelled by ops at 12:03".
A step's job page links its workflow (``workflow_link``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from jobs.admin import workflow_graph
from jobs.admin.counting import BoundedCountingMixin
from jobs.admin.display import exact_timestamp, format_duration, shorten, status_badge, timestamp
from jobs.admin.filters import IdOrKeySearchMixin, OwnFiltersOnlyMixin
from jobs.admin.operations import ACTIONS_SHOWN, clock_time, next_url
from jobs.admin.permissions import ViewJobsPermissionMixin, can_view
from jobs.errors import InvalidTransition
from jobs.models import Job, Workflow, WorkflowStep
from jobs.workflow import progress

CHANGE_PERMISSION = "platform.change_workflow"
#: How often a running workflow's page reloads itself (seconds): an HTML refresh, no script.
REFRESH_SECONDS = 5


def can_change(user: Any) -> bool:
    return can_view(user) and bool(user.has_perm(CHANGE_PERMISSION))


class WorkflowStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(status.value, status.label.lower()) for status in Workflow.Status]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Workflow]) -> QuerySet[Workflow]:
        value = self.value()
        return queryset.filter(status=value) if value in Workflow.Status.values else queryset


@admin.register(Workflow)
class WorkflowAdmin(
    ViewJobsPermissionMixin, OwnFiltersOnlyMixin, IdOrKeySearchMixin, BoundedCountingMixin, admin.ModelAdmin
):
    list_display = (
        "id",
        "name",
        "status_badge",
        "steps_cell",
        "dedupe_key",
        "started",
        "ended",
        "message_cell",
    )
    list_display_links = ("id", "name")
    list_filter = (WorkflowStatusFilter,)
    sortable_by = ()  # the (status, id) and primary-key indexes serve the list newest first
    ordering = ("-id",)
    search_fields = ("dedupe_key",)
    search_help_text = "A workflow id (e.g. 12) or an exact dedupe key."
    list_per_page = 50
    actions = None
    change_list_template = "admin/platform/change_list.html"
    change_form_template = "admin/platform/workflow/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "status_badge",
                    "steps_cell",
                    "message",
                    "dedupe_key",
                    "operator_actions",
                    ("created", "finished", "took"),
                )
            },
        ),
    )
    readonly_fields = ("status_badge", "steps_cell", "operator_actions", "created", "finished", "took")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(request, {"title": "Workflows", **(extra_context or {})})

    # --- cells ------------------------------------------------------------------------------

    @admin.display(description="status")
    def status_badge(self, workflow: Workflow) -> SafeString:
        return status_badge(workflow.status)

    @admin.display(description="steps")
    def steps_cell(self, workflow: Workflow) -> SafeString:
        done = workflow.succeeded_steps
        return format_html(
            '<span class="job-progress"><progress max="{}" value="{}"></progress> '
            '<span class="job-percent">{} of {} succeeded</span></span>',
            workflow.steps,
            done,
            f"{done:,}",
            f"{workflow.steps:,}",
        )

    @admin.display(description="started")
    def started(self, workflow: Workflow) -> SafeString | str:
        return timestamp(workflow.created_at, timezone.now())

    @admin.display(description="ended")
    def ended(self, workflow: Workflow) -> SafeString | str:
        if workflow.finished_at is None:
            return "—"
        return format_html(
            "{} <span class='quiet'>({})</span>",
            timestamp(workflow.finished_at, timezone.now()),
            format_duration(workflow.finished_at - workflow.created_at),
        )

    @admin.display(description="message")
    def message_cell(self, workflow: Workflow) -> str:
        return shorten(workflow.message) if workflow.message else ""

    @admin.display(description="created")
    def created(self, workflow: Workflow) -> SafeString | str:
        return exact_timestamp(workflow.created_at)

    @admin.display(description="finished")
    def finished(self, workflow: Workflow) -> SafeString | str:
        return exact_timestamp(workflow.finished_at)

    @admin.display(description="took")
    def took(self, workflow: Workflow) -> str:
        end = workflow.finished_at or (timezone.now() if workflow.status == Workflow.Status.RUNNING else None)
        if end is None:
            return "—"
        return format_duration(end - workflow.created_at) + ("" if workflow.finished_at else " so far")

    @admin.display(description="operator actions")
    def operator_actions(self, workflow: Workflow) -> SafeString | str:
        """ "Cancelled by ops at 12:03", newest first, from the admin log."""
        entries = (
            LogEntry.objects.filter(
                content_type_id=ContentType.objects.get_for_model(Workflow).pk, object_id=str(workflow.pk)
            )
            .select_related("user")
            .order_by("-action_time")[:ACTIONS_SHOWN]
        )
        if not entries:
            return "—"
        return format_html_join(
            "",
            '<div class="job-operator-action">{} by <strong>{}</strong> at {}</div>',
            (
                (entry.get_change_message(), entry.user.get_username(), clock_time(entry.action_time))
                for entry in entries
            ),
        )

    # --- the page ------------------------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        workflow = self.get_object(request, object_id) if str(object_id).isdigit() else None
        context: dict[str, Any] = {"can_change": can_change(request.user)}
        if workflow is not None:
            graph = workflow_graph.build(workflow)
            context.update(
                graph=workflow_graph.svg(graph),
                steps_shown=graph.steps_shown,
                refresh_seconds=REFRESH_SECONDS if workflow.status == Workflow.Status.RUNNING else 0,
                title=f"Workflow #{workflow.pk}: {workflow.name}",
            )
        return super().change_view(request, object_id, form_url, {**context, **(extra_context or {})})

    # --- Retry and Cancel ------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view  # login, staff check and CSRF protection
        return [
            path("<int:object_id>/retry/", wrap(self.retry_view), name="platform_workflow_retry"),
            path("<int:object_id>/cancel/", wrap(self.cancel_view), name="platform_workflow_cancel"),
            *super().get_urls(),
        ]

    @method_decorator(require_POST)
    def retry_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._act(
            request, object_id, progress.retry, "Retried", "resumes: its failed steps are queued again"
        )

    @method_decorator(require_POST)
    def cancel_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._act(
            request, object_id, progress.cancel, "Cancelled", "is cancelled (a running step is waited out)"
        )

    def _act(
        self,
        request: HttpRequest,
        object_id: int,
        verb: Callable[[int], Workflow],
        logged: str,
        done: str,
    ) -> HttpResponse:
        if not can_change(request.user):
            raise PermissionDenied
        get_object_or_404(Workflow.objects.only("pk"), pk=object_id)
        url = reverse("admin:platform_workflow_change", args=[object_id])
        try:
            workflow = verb(object_id)
        except InvalidTransition as exc:  # it changed state since the page was drawn
            self.message_user(request, str(exc), messages.ERROR)
        else:
            self.log_change(request, workflow, logged)
            self.message_user(
                request,
                format_html('Workflow <a href="{}">#{}</a> {}.', url, object_id, done),
                messages.SUCCESS,
            )
        return HttpResponseRedirect(next_url(request, url))


def workflow_link(job: Job) -> SafeString | str:
    """A step's job page: "step #2 repository.ingest[repository:7] of workflow #12
    workspace.provision (running)", the workflow linked."""
    if job.step_id is None:
        return "—"
    step = (
        WorkflowStep.objects.filter(pk=job.step_id)
        .values("position", "name", "workflow_id", "workflow__name", "workflow__status")
        .first()
    )
    if step is None:
        return "—"
    return format_html(
        'step #{} {} of <a href="{}">workflow #{} {}</a> {}',
        step["position"],
        step["name"],
        reverse("admin:platform_workflow_change", args=[step["workflow_id"]]),
        step["workflow_id"],
        step["workflow__name"],
        status_badge(step["workflow__status"]),
    )
