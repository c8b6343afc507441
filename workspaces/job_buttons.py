"""Buttons on an admin change page that queue a job for the object, and nothing else.

A button is a POST form (with Django's CSRF token) to ``<object id>/jobs/<slug>/``; the view
checks the change permission on that object, enqueues through a trigger function of
``workspaces.services.triggers`` (deduplicated, so pressing twice gives one job) and
returns to the page with a message linking to the job on the "Background jobs" page. A
trigger that refuses (``NotReady``: an inactive connection) queues nothing and its reason
is the message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html

from jobs import Job
from workspaces.errors import NotReady


@dataclass(frozen=True)
class JobButton:
    slug: str
    label: str
    enqueue: Callable[..., Job]
    # Whether the button applies to this object (say, a capsule summary needs a merged pull request).
    shown: Callable[..., bool] = lambda obj: True


def job_link(job: Job) -> str:
    return reverse("admin:platform_job_change", args=[job.pk])


class JobButtonsMixin(admin.ModelAdmin):
    change_form_template = "admin/workspaces/change_form_with_job_buttons.html"
    job_buttons: tuple[JobButton, ...] = ()

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/jobs/<slug:slug>/",
                self.admin_site.admin_view(self.job_button_view),
                name="{}_{}_job_button".format(*info),
            ),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        buttons = []
        if obj is not None and self.has_change_permission(request, obj):
            info = self.opts.app_label, self.opts.model_name
            buttons = [
                {
                    "label": button.label,
                    "url": reverse("admin:{}_{}_job_button".format(*info), args=[obj.pk, button.slug]),
                }
                for button in self.job_buttons
                if button.shown(obj)
            ]
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), "job_buttons": buttons}
        )

    def job_button_view(self, request: HttpRequest, object_id: str, slug: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        button = next((button for button in self.job_buttons if button.slug == slug), None)
        obj = self.get_object(request, object_id)
        if button is None or obj is None:
            raise Http404
        if not self.has_change_permission(request, obj) or not button.shown(obj):
            raise PermissionDenied
        try:
            with transaction.atomic():
                job = button.enqueue(obj)
        except NotReady as refused:  # e.g. an inactive connection: say why, queue nothing
            self.message_user(request, str(refused), messages.ERROR)
            return HttpResponseRedirect(
                reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])
            )
        self.message_user(
            request,
            format_html(
                '{} for {}: <a href="{}">{} job #{}</a> is {}.',
                button.label,
                obj,
                job_link(job),
                job.type,
                job.pk,
                job.status,
            ),
            messages.SUCCESS,
        )
        return HttpResponseRedirect(
            reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])
        )
