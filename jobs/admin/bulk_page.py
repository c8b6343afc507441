"""Retry all / Dismiss all matching on the Background jobs page: every failed job that
matches the list's queue and type filters and, if given, a text in its error and when it
failed, not only the rows of one page (``jobs.bulk``).

The failed list (``?status=failed``) shows a form for the narrower filters and the two
buttons; they lead to a confirmation page that counts the matching jobs and names N ("Retry
all 50,000 matching"). Confirming needs the change permission (``platform.change_job``),
enqueues one ``platform.bulk`` job, records who asked and for which filter in the admin log
(on that job's History) and goes to that job's page, where its progress shows as it works
through the batches. The page itself does one count and one insert.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

import jobs
from jobs import bulk, registry
from jobs.bulk import ACTIONS, ERROR_TEXT_CHARS, Matching


class MatchingForm(forms.Form):
    """The filter of a bulk action, from the list's URL and the failed list's form; bounded,
    and only queues and types the engine knows."""

    action = forms.ChoiceField(choices=[(name, name) for name in ACTIONS])
    queue = forms.CharField(required=False, max_length=50)
    type = forms.CharField(required=False, max_length=100)
    error = forms.CharField(required=False, max_length=ERROR_TEXT_CHARS, strip=False)
    failed_from = forms.DateTimeField(required=False)
    failed_until = forms.DateTimeField(required=False)

    def clean_queue(self) -> str:
        queue = self.cleaned_data["queue"]
        if queue and queue not in registry.queues():
            raise forms.ValidationError(f"No queue is called {queue!r}.")
        return queue

    def clean_type(self) -> str:
        name = self.cleaned_data["type"]
        if name and name not in registry.names():
            raise forms.ValidationError(f"No job type is called {name!r}.")
        return name

    def matching(self) -> Matching:
        data = self.cleaned_data
        return Matching(
            queue=data["queue"],
            type=data["type"],
            error=data["error"],
            failed_from=data["failed_from"],
            failed_until=data["failed_until"],
        )


class BulkMatchingMixin(admin.ModelAdmin):
    """The confirmation page of Retry all / Dismiss all matching, and its POST."""

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view
        return [
            path("matching/", wrap(self.matching_view), name="{}_{}_matching".format(*info)),
            *super().get_urls(),
        ]

    def matching_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_operate_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        form = MatchingForm(request.POST if request.method == "POST" else request.GET)
        if not form.is_valid():
            for field, errors in form.errors.items():
                self.message_user(
                    request, f"{field}: {' '.join(str(error) for error in errors)}", messages.ERROR
                )
            return HttpResponseRedirect(reverse("admin:platform_job_changelist") + "?status=failed")
        action, matching = form.cleaned_data["action"], form.matching()
        count = matching.jobs().count()
        if request.method == "POST" and count:
            return self._start(request, action, matching, count)
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{action.capitalize()} all {count:,} matching failed jobs?",
            "action": action,
            "done": ACTIONS[action],
            "count": count,
            "count_text": f"{count:,}",
            "described": matching.describe(),
            "form": form,
        }
        return TemplateResponse(request, "admin/platform/observe/bulk_confirm.html", context)

    def _start(self, request: HttpRequest, action: str, matching: Matching, count: int) -> HttpResponse:
        by = request.user.get_username()
        started = jobs.enqueue(
            bulk.TYPE, {"action": action, "matching": matching.payload(), "total": count, "by": by}
        )
        said = f"{action.capitalize()} all {count:,} matching: {matching.describe()}"
        self.log_addition(request, started, said)  # who asked, for which filter: the job's History
        self.message_user(request, f"{said}. Its progress is below.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:platform_job_change", args=[started.pk]))
