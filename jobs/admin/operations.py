"""Retry, Cancel and Dismiss on the Background jobs page: a row's button (Retry, Cancel), a
job's page, bulk actions (and a record's "Recent jobs" panel, which posts to the same views).

They only ever call ``jobs.store.retry`` / ``cancel`` / ``dismiss``, one job at a time, so
every rule and its error message stay in the engine. Who did it and when goes to Django's
admin log (the job's History), and a job's page reads it back: "Requeued by ops at 12:03".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from jobs import store
from jobs.admin.permissions import can_operate
from jobs.errors import InvalidTransition
from jobs.models import Job

#: A bulk action handles at most this many jobs: each goes through the engine one by one.
BULK_LIMIT = 1_000
#: What the admin log says of each action (a job's page reads "Requeued by ops at 12:03").
REQUEUED = "Requeued"
CANCELLED = "Cancelled"
DISMISSED = "Dismissed"
#: A job's page names at most this many operator actions, the newest.
ACTIONS_SHOWN = 10


class RetryCancelMixin(admin.ModelAdmin):
    """The Retry and Cancel URLs, views and bulk actions of the job list."""

    actions = ("retry_selected", "cancel_selected", "dismiss_selected")

    def has_operate_permission(self, request: HttpRequest) -> bool:
        """Named ``operate`` so the actions can ask for it (``permissions=["operate"]``)."""
        return can_operate(request.user)

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view  # login, staff check and CSRF protection
        return [
            path("<int:object_id>/retry/", wrap(self.retry_view), name="{}_{}_retry".format(*info)),
            path("<int:object_id>/cancel/", wrap(self.cancel_view), name="{}_{}_cancel".format(*info)),
            path("<int:object_id>/dismiss/", wrap(self.dismiss_view), name="{}_{}_dismiss".format(*info)),
            *super().get_urls(),
        ]

    @method_decorator(require_POST)
    def retry_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.retry, REQUEUED, "is queued again")

    @method_decorator(require_POST)
    def cancel_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.cancel, CANCELLED, "is cancelled")

    @method_decorator(require_POST)
    def dismiss_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.dismiss, DISMISSED, "is dismissed")

    def _operate(
        self, request: HttpRequest, object_id: int, verb: Callable[[int], Job], logged: str, done: str
    ) -> HttpResponse:
        if not self.has_operate_permission(request):
            raise PermissionDenied
        get_object_or_404(Job.objects.only("pk"), pk=object_id)
        try:
            job = verb(object_id)
        except InvalidTransition as exc:  # it changed state since the page was drawn
            self.message_user(request, str(exc), messages.ERROR)
        except Job.DoesNotExist:
            raise Http404(f"Job #{object_id} no longer exists.") from None
        else:
            self.log_change(request, job, logged)
            self.message_user(
                request,
                format_html('Job <a href="{}">#{}</a> {}.', _job_url(object_id), object_id, done),
                messages.SUCCESS,
            )
        return HttpResponseRedirect(next_url(request, reverse("admin:platform_job_change", args=[object_id])))

    @admin.action(description="Retry selected failed jobs", permissions=["operate"])
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._bulk(request, queryset, store.retry, REQUEUED, "queued again")

    @admin.action(description="Cancel selected queued jobs", permissions=["operate"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._bulk(request, queryset, store.cancel, CANCELLED, "cancelled")

    @admin.action(description="Dismiss selected failed jobs", permissions=["operate"])
    def dismiss_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._bulk(request, queryset, store.dismiss, DISMISSED, "dismissed")

    def _bulk(
        self,
        request: HttpRequest,
        queryset: QuerySet[Job],
        verb: Callable[[int], Job],
        logged: str,
        done: str,
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
                self.log_change(request, verb(job_id), logged)
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

    # --- a job's page: who did what ----------------------------------------------------------

    @admin.display(description="operator actions")
    def operator_actions(self, job: Job) -> SafeString | str:
        """ "Requeued by ops at 12:03", newest first, from the admin log (the job's History)."""
        entries = (
            LogEntry.objects.filter(
                content_type_id=ContentType.objects.get_for_model(Job).pk, object_id=str(job.pk)
            )
            .select_related("user")
            .order_by("-action_time")[:ACTIONS_SHOWN]
        )
        rows = [
            (entry.get_change_message(), entry.user.get_username(), entry.action_time) for entry in entries
        ]
        if not rows:
            return "—"
        return format_html_join(
            "",
            '<div class="job-operator-action">{} by <strong>{}</strong> at <time datetime="{}" title="{}">{}</time></div>',
            (
                (message, user, moment.isoformat(), timezone.localtime(moment), clock_time(moment))
                for message, user, moment in rows
            ),
        )


def clock_time(moment: datetime) -> str:
    """``12:03`` today, ``2026-11-29 12:03`` another day: how an operator says when."""
    local = timezone.localtime(moment)
    if local.date() == timezone.localdate():
        return local.strftime("%H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def _job_url(job_id: int) -> str:
    return reverse("admin:platform_job_change", args=[job_id])


def next_url(request: HttpRequest, default: str) -> str:
    """Where a button's POST returns: the page it came from (its ``next``, on this site only)."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
