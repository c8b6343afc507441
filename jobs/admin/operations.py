"""Retry, Cancel and Dismiss on the Background jobs page: a row's button (Retry, Cancel), a
job's page, bulk actions.

They only ever call ``jobs.store.retry`` / ``cancel`` / ``dismiss``, one job at a time, so
every rule and its error message stay in the engine.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from jobs import store
from jobs.admin.permissions import can_operate
from jobs.errors import InvalidTransition
from jobs.models import Job

#: A bulk action handles at most this many jobs: each goes through the engine one by one.
BULK_LIMIT = 1_000


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
        return self._operate(request, object_id, store.retry, "Job #{} is queued again.")

    @method_decorator(require_POST)
    def cancel_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.cancel, "Job #{} is cancelled.")

    @method_decorator(require_POST)
    def dismiss_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._operate(request, object_id, store.dismiss, "Job #{} is dismissed.")

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

    @admin.action(description="Dismiss selected failed jobs", permissions=["operate"])
    def dismiss_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._bulk(request, queryset, store.dismiss, "dismissed")

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
