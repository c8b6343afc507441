"""What every workspace admin page shares: queueing jobs (or starting workflows) from a list
action with a message that links them, and the bases of pages whose rows (or timestamps)
the system writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from jobs import Job, PermanentError, Workflow, admin_list_url, admin_url, enqueue, workflow_url
from workspaces import addresses


def queue_jobs(modeladmin: admin.ModelAdmin, request, type_name: str, payloads: list[dict]) -> None:
    """One job per payload; a subject that already has one queued or running keeps it. The
    message links the jobs (a few by number, more as the Background jobs page filtered)."""
    with transaction.atomic():
        queued = [enqueue(type_name, payload) for payload in payloads]
    modeladmin.message_user(request, queued_message(type_name, queued), messages.SUCCESS)


def start_workflows(
    modeladmin: admin.ModelAdmin, request, name: str, starts: list[Callable[[], Workflow]]
) -> None:
    """One workflow per subject (a subject whose workflow runs keeps it); the message links
    them. A subject that refuses (``PermanentError``: nothing to start from) is named."""
    started: list[Workflow] = []
    with transaction.atomic():
        for start in starts:
            try:
                with transaction.atomic():
                    started.append(start())
            except PermanentError as refused:
                modeladmin.message_user(request, str(refused), messages.ERROR)
    if started:
        links = format_html_join(
            ", ", '<a href="{}">#{}</a>', ((workflow_url(workflow), workflow.pk) for workflow in started[:20])
        )
        more = f" and {len(started) - 20} more" if len(started) > 20 else ""
        modeladmin.message_user(
            request,
            format_html("Started {} {} workflow(s): {}{}.", len(started), name, links, more),
            messages.SUCCESS,
        )


def queued_message(type_name: str, queued: list[Job]) -> str:
    if len(queued) <= 5:
        links = format_html_join(", ", '<a href="{}">#{}</a>', ((job_url(job), job.pk) for job in queued))
        return format_html("Queued {} {} job(s): {}.", len(queued), type_name, links)
    listing = admin_list_url(type=type_name, status="queued")
    return format_html('Queued {} <a href="{}">{} jobs</a>.', len(queued), listing, type_name)


def job_url(job: Job) -> str:
    return admin_url(job)


class SystemTimestamps(admin.ModelAdmin):
    """``created_at`` is written by the database: shown, never typed in."""

    class Media:
        css = {"all": ["workspaces/admin.css"]}

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if "created_at" not in fields and any(f.name == "created_at" for f in self.model._meta.fields):
            fields.append("created_at")
        return fields


class SystemWritten(SystemTimestamps):
    """Rows the jobs write: read, never added or edited by hand, and deleted only where
    ``deletable`` allows (retention)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is not None and self.deletable(obj) and super().has_delete_permission(request, obj)

    def deletable(self, obj: Any) -> bool:
        return False


class RepositoryForm(forms.ModelForm):
    """A URL is never shown back with its user part: a form that has errors (a URL the
    parsers read differently, a credential refused, any other field) shows *** in its place,
    as a password field shows nothing; the credential is typed again."""

    # _post_clean is Django's last step of validation, which django-stubs does not declare.
    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]
        url = str(self.data.get(self.add_prefix("url"), ""))
        if self.errors and "@" in url:
            shown = self.data.copy()  # type: ignore[attr-defined]  # a QueryDict
            shown[self.add_prefix("url")] = addresses.shown(url)
            self.data = shown
