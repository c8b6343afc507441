"""A domain record's admin pages, with what the background jobs did to it and buttons that
queue more: where an operator looks.

The engine names no domain model. A domain's ``ModelAdmin`` says which payload field names
its records, and which buttons its page has::

    class RepositoryAdmin(jobs.RecordJobsMixin, admin.ModelAdmin):
        jobs_subject = "repository_id"
        list_display = [..., "last_job"]
        job_buttons = (jobs.JobButton("reindex", "Re-index", triggers.request_ingest),)

- The change page shows a "Recent jobs" panel: the newest jobs of every type keyed by that
  field alone (``jobs.jobs_about``), with type, status, attempts, when and error, each linked
  to its page, with Retry (failed) and Cancel (queued) for users with
  ``platform.change_job``. Users without ``platform.view_jobs`` see neither links nor errors.
- ``last_job`` is a list column: the newest such job of each row, read for the whole page
  in one query.
- Each ``JobButton`` is a POST form in the page's tools (with its CSRF token). The view
  checks the change permission on the object, calls the button, records who pressed it in
  the admin log (the object's History), and answers with a message linking to the job, or
  to the workflow a button starts (``jobs.start``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models.functions import Left
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs import queries
from jobs.admin.display import job_moment, local_time, shorten, status_badge
from jobs.admin.operations import clock_time
from jobs.admin.permissions import can_operate, can_view
from jobs.errors import PermanentError
from jobs.models import Job, Status, Workflow

#: A list filter drawn as a drop-down in the bar above the list (the Background jobs page's).
DROP_DOWN_FILTER = "admin/platform/job/filter.html"
#: How much of each job's error the panel reads (errors can be megabytes; the job's page has it whole).
ERROR_READ_CHARS = 400


def _always(obj: Any) -> bool:
    return True


@dataclass(frozen=True)
class JobButton:
    """A button on a record's page. ``press(obj)`` queues the job and returns it (pressing
    twice returns the same queued job: the type's dedupe key), or starts a workflow and
    returns it (``jobs.start``, deduplicated by its own key); a button that queues nothing
    (Accept, Reject) returns what it did instead, as text. A press the record refuses raises
    ``jobs.PermanentError``: its text is shown and nothing is recorded."""

    slug: str
    label: str
    press: Callable[[Any], Job | Workflow | str]
    shown: Callable[[Any], bool] = field(default=_always)  # offered for this object?


def job_url(job: Job | int) -> str:
    return reverse("admin:platform_job_change", args=[job.pk if isinstance(job, Job) else job])


def job_state(job: Job) -> str:
    """What a record's reader needs of its job's status, in words: "retrying 2/3 at 12:04"
    while a retry waits (the next try's number), "failed for good after 3/3 tries"."""
    if job.waiting_for_retry:
        return f"retrying {job.attempts + 1}/{job.max_attempts} at {clock_time(job.run_at)}"
    if job.status == Status.FAILED:
        return f"failed for good after {job.attempts}/{job.max_attempts} tries"
    return str(job.status)


def state_badge(job: Job) -> SafeString:
    """The status badge; a retry waiting says when, in its own colour."""
    if job.waiting_for_retry:
        return format_html(
            '<span class="job-status job-status--retrying" title="runs again at {}">{}</span>',
            local_time(job.run_at),
            job_state(job),
        )
    return status_badge(job.status)


@dataclass(frozen=True)
class PanelRow:
    job: Job
    when: SafeString | str
    error: str

    @property
    def state(self) -> SafeString:
        return state_badge(self.job)

    @property
    def url(self) -> str:
        return job_url(self.job)


@dataclass(frozen=True)
class RecentJobs:
    rows: list[PanelRow]
    can_view: bool  # links and errors
    can_operate: bool  # Retry and Cancel
    all_url: str  # the Background jobs page searched for this record's key, or ""
    back_url: str  # where Retry and Cancel return to


class RecordJobsMixin(admin.ModelAdmin):
    """The "Recent jobs" panel, the ``last_job`` column and the ``job_buttons`` of a record's
    admin pages (see the module's docstring)."""

    #: The payload field that holds this model's id in its jobs' payloads ("" for none).
    jobs_subject: str = ""
    job_buttons: tuple[JobButton, ...] = ()
    #: The panel lists this many of the newest jobs.
    recent_jobs_shown = 10
    change_form_template = "admin/platform/record/change_form.html"
    change_list_template = "admin/platform/change_list.html"
    #: A job's state in words, for a domain's own columns ("failed — retrying 2/3 at 12:04").
    job_state = staticmethod(job_state)

    @property
    def media(self) -> forms.Media:
        return super().media + forms.Media(css={"all": ["platform/records.css"]})

    # --- buttons ------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/jobs/<slug:slug>/",
                self.admin_site.admin_view(self.job_button_view),
                name="{}_{}_job_button".format(*info),
            ),
            *super().get_urls(),
        ]

    def job_button_view(self, request: HttpRequest, object_id: str, slug: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        button = next((button for button in self.job_buttons if button.slug == slug), None)
        obj = self.get_object(request, unquote(object_id))
        if button is None or obj is None:
            raise Http404
        if not self.has_change_permission(request, obj) or not button.shown(obj):
            raise PermissionDenied
        try:
            with transaction.atomic():  # the job exists once the press is committed
                outcome = button.press(obj)
        except PermanentError as refused:
            self.message_user(request, f"{button.label}: {refused}", messages.ERROR)
        else:
            shown: SafeString | str
            if isinstance(outcome, Workflow):
                said = f"{button.label}: started {outcome.name} workflow #{outcome.pk}"
                shown = format_html(
                    '{} for {}: <a href="{}">{} workflow #{}</a> is {}.',
                    button.label,
                    obj,
                    reverse("admin:platform_workflow_change", args=[outcome.pk]),
                    outcome.name,
                    outcome.pk,
                    outcome.status,
                )
            elif isinstance(outcome, Job):
                said = f"{button.label}: queued {outcome.type} job #{outcome.pk}"
                shown = format_html(
                    '{} for {}: <a href="{}">{} job #{}</a> is {}.',
                    button.label,
                    obj,
                    job_url(outcome),
                    outcome.type,
                    outcome.pk,
                    outcome.status,
                )
            else:
                said = shown = f"{button.label}: {outcome}"
            self.log_change(request, obj, said)  # who pressed it, and when: the object's History
            self.message_user(request, shown, messages.SUCCESS)
        info = self.opts.app_label, self.opts.model_name
        return HttpResponseRedirect(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))

    def _buttons(self, request: HttpRequest, obj: Any) -> list[dict[str, str]]:
        if not self.has_change_permission(request, obj):
            return []
        info = self.opts.app_label, self.opts.model_name
        return [
            {
                "slug": button.slug,
                "label": button.label,
                "url": reverse("admin:{}_{}_job_button".format(*info), args=[obj.pk, button.slug]),
            }
            for button in self.job_buttons
            if button.shown(obj)
        ]

    # --- the record's page ----------------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        context: dict[str, Any] = {}
        if obj is not None:
            context["job_buttons"] = self._buttons(request, obj)
            if self.jobs_subject:
                context["recent_jobs"] = self.recent_jobs(request, obj)
        return super().change_view(request, object_id, form_url, {**context, **(extra_context or {})})

    def recent_jobs(self, request: HttpRequest, obj: Any) -> RecentJobs:
        key = {self.jobs_subject: obj.pk}
        jobs = (
            queries.jobs_about(key)
            .defer("payload", "error")
            .annotate(error_head=Left("error", ERROR_READ_CHARS))[: self.recent_jobs_shown]
        )
        viewer = can_view(request.user)
        now = timezone.now()
        rows = [PanelRow(job, job_moment(job, now), job.error_head if viewer else "") for job in jobs]
        keys = queries.subject_keys(key)
        all_url = ""
        if viewer and len(keys) == 1:
            all_url = f"{reverse('admin:platform_job_changelist')}?q={keys[0]}"
        return RecentJobs(rows, viewer, can_operate(request.user), all_url, request.get_full_path())

    # --- the list ---------------------------------------------------------------------------------

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type:
        changelist = super().get_changelist(request, **kwargs)
        subject = self.jobs_subject

        class RecordChangeList(changelist):  # type: ignore[valid-type,misc]
            """Filters as drop-downs above the list, and the newest job of every row on the
            page read in one query."""

            def get_filters(self, request: HttpRequest) -> tuple[Any, ...]:
                found = super().get_filters(request)
                for spec in found[0]:
                    spec.template = DROP_DOWN_FILTER
                return found

            def get_results(self, request: HttpRequest) -> None:
                super().get_results(request)
                if subject:
                    latest = queries.latest_jobs_about(subject, [obj.pk for obj in self.result_list])
                    for obj in self.result_list:
                        obj._last_job = latest.get(obj.pk)

        return RecordChangeList

    def last_job_of(self, obj: Any) -> Job | None:
        """The newest job about ``obj``: read with the list's page, or now."""
        if not hasattr(obj, "_last_job"):
            obj._last_job = queries.latest_jobs_about(self.jobs_subject, [obj.pk]).get(obj.pk)
        return obj._last_job

    @admin.display(description="last job")
    def last_job(self, obj: Any) -> SafeString | str:
        job = self.last_job_of(obj)
        if job is None:
            return "—"
        return format_html(
            '<span class="record-last-job">{} <a href="{}" title="{}">{}</a></span>',
            state_badge(job),
            job_url(job),
            shorten(f"{job.type} #{job.pk}: {job.message}" if job.message else f"{job.type} #{job.pk}"),
            job.type,
        )
