"""The flow-control page (Platform → Queues): per queue its limits in force and where they
come from, the jobs running against them, the starts in the current rate window, the due
jobs waiting on a limit, and whether it is paused; per limited type (read-only: the code
declares them) the same. An operator pauses and resumes a queue and sets or resets its
limits here; the Background jobs page's Pause and Resume buttons post here too.

Seeing it needs ``platform.view_jobs``; every change also needs ``platform.change_queue``,
goes through ``jobs.flow.queues`` (stored in the database: every worker follows within a
poll interval) and is written to the admin log (the queue's History): "Paused",
"Limits: at most 4 running, 100 a minute starts".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_POST

from jobs import registry
from jobs.admin.operations import clock_time, next_url
from jobs.admin.permissions import ViewJobsPermissionMixin, can_view
from jobs.flow import queues, usage
from jobs.flow.limits import concurrency_number
from jobs.flow.rates import Rate
from jobs.models import Queue

CHANGE_PERMISSION = "platform.change_queue"
PAUSED = "Paused"
RESUMED = "Resumed"
RESET = "Limits reset to the settings"


def can_change(user: Any) -> bool:
    return can_view(user) and bool(user.has_perm(CHANGE_PERMISSION))


class QueueForm(forms.ModelForm):
    """A queue's own page: its pause and limits, checked as the API checks them."""

    class Meta:
        model = Queue
        fields = ("paused", "limits_set", "concurrency", "rate")
        labels = {"limits_set": "Use these limits (in place of JOBS_QUEUES)"}

    def clean_concurrency(self) -> int | None:
        return _checked(lambda: concurrency_number(self.cleaned_data.get("concurrency"), "concurrency"))

    def clean_rate(self) -> str:
        rate = (self.cleaned_data.get("rate") or "").strip()
        return str(_checked(lambda: Rate.parse(rate))) if rate else ""


@admin.register(Queue)
class QueueAdmin(ViewJobsPermissionMixin, admin.ModelAdmin):
    form = QueueForm
    readonly_fields = ("queue", "changed_at")
    fields = ("queue", "paused", "limits_set", "concurrency", "rate", "changed_at")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_change(request.user)

    def save_model(self, request: HttpRequest, obj: Queue, form: forms.ModelForm, change: bool) -> None:
        """Through ``jobs.flow.queues``, one verb per change (Django's admin logs the form)."""
        if "paused" in form.changed_data:
            (queues.pause if obj.paused else queues.resume)(obj.queue)
        if {"limits_set", "concurrency", "rate"} & set(form.changed_data):
            if obj.limits_set:
                queues.set_limits(obj.queue, concurrency=obj.concurrency, rate=obj.rate or None)
            else:
                queues.reset_limits(obj.queue)

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view  # login, staff check and CSRF protection
        return [
            path("<str:queue>/pause/", wrap(self.pause_view), name="platform_queue_pause"),
            path("<str:queue>/resume/", wrap(self.resume_view), name="platform_queue_resume"),
            path("<str:queue>/limits/", wrap(self.limits_view), name="platform_queue_limits"),
            path("", wrap(self.changelist_view), name="platform_queue_changelist"),
            *super().get_urls(),  # a queue's own page and its History
        ]

    # --- the page ---------------------------------------------------------------------------

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        found = usage.snapshot()
        changes = _last_changes([line.queue for line in found.queues])
        context = {
            **self.admin_site.each_context(request),
            "title": "Flow control",
            "opts": self.opts,
            "snapshot": found,
            "last_change": changes,
            "can_change": can_change(request.user),
            "jobs_url": reverse("admin:platform_job_changelist"),
            **(extra_context or {}),
        }
        for line in found.queues:
            line.last_change = changes.get(line.queue, "")
        return TemplateResponse(request, "admin/platform/queue/flow.html", context)

    # --- the buttons and the form -----------------------------------------------------------

    @method_decorator(require_POST)
    def pause_view(self, request: HttpRequest, queue: str) -> HttpResponse:
        return self._act(request, queue, lambda: _said(queues.pause(queue), PAUSED))

    @method_decorator(require_POST)
    def resume_view(self, request: HttpRequest, queue: str) -> HttpResponse:
        return self._act(request, queue, lambda: _said(queues.resume(queue), RESUMED))

    @method_decorator(require_POST)
    def limits_view(self, request: HttpRequest, queue: str) -> HttpResponse:
        if "reset" in request.POST:
            return self._act(request, queue, lambda: _said(queues.reset_limits(queue), RESET))

        def save() -> tuple[Queue, str]:
            concurrency = _whole_number(request.POST.get("concurrency", ""))
            rate = request.POST.get("rate", "").strip()[:20] or None
            row = queues.set_limits(queue, concurrency=concurrency, rate=rate)
            return row, f"Limits: {queues.current()[queue].describe()}"

        return self._act(request, queue, save)

    def _act(self, request: HttpRequest, queue: str, act: Callable[[], tuple[Queue, str]]) -> HttpResponse:
        if not can_change(request.user):
            raise PermissionDenied
        if queue not in _known_queues():
            raise Http404(f"No queue {queue!r}.")
        try:
            row, logged = act()
        except ValueError as exc:
            self.message_user(request, f"Queue {queue}: {exc}", messages.ERROR)
        else:
            self.log_change(request, row, logged)
            self.message_user(request, f"Queue {queue}: {logged[0].lower()}{logged[1:]}.", messages.SUCCESS)
        return HttpResponseRedirect(next_url(request, reverse("admin:platform_queue_changelist")))


def _checked[T](read: Callable[[], T]) -> T:
    try:
        return read()
    except (ValueError, ImproperlyConfigured) as exc:
        raise forms.ValidationError(str(exc)) from None


def _said(row: Queue, logged: str) -> tuple[Queue, str]:
    return row, logged


def _whole_number(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 7:
        raise ValueError(f"concurrency must be a whole number, got {text[:20]!r}.")
    return int(text)


def _known_queues() -> set[str]:
    """The queues an operator may pause or limit: the types', the settings', the rows'."""
    return {
        *registry.queues(),
        *queues.settings_limits(),
        *Queue.objects.values_list("queue", flat=True),
    }


def _last_changes(names: list[str]) -> dict[str, str]:
    """Each queue's newest operator change, from the admin log: "Paused by ops at 12:03"."""
    rows = dict(Queue.objects.filter(queue__in=names).values_list("pk", "queue"))
    if not rows:
        return {}
    entries = (
        LogEntry.objects.filter(
            content_type_id=ContentType.objects.get_for_model(Queue).pk,
            object_id__in=[str(pk) for pk in rows],
        )
        .select_related("user")
        .order_by("-action_time")[:200]
    )
    said: dict[str, str] = {}
    for entry in entries:
        queue = rows.get(int(entry.object_id or 0))
        if queue is not None and queue not in said:
            said[queue] = (
                f"{entry.get_change_message()} by {entry.user.get_username()} at {clock_time(entry.action_time)}"
            )
    return said
