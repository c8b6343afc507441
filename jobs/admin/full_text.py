"""Long texts on a job's page: shown cut at ``JOBS_ADMIN_TEXT_CHARS``, the whole a link away.

A job's payload and error, and each failed try's error and traceback, can be megabytes (a
handler that puts a whole document into its exception, a payload written before the size
limit). The page reads only the first ``JOBS_ADMIN_TEXT_CHARS + 1`` characters of each, in
SQL, and shows more than that as a link to the whole text, served as plain text (or JSON)
to the same viewers: never rendered into HTML.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import F, TextField
from django.db.models.functions import Cast, Left
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.admin.permissions import can_view
from jobs.conf import jobs_settings
from jobs.models import Job, JobAttempt

#: The texts of a job and of a try that can be read whole, by the column that holds each.
# jsonb columns, read as their text.
JSON_COLUMNS = frozenset({"payload", "result"})
JOB_TEXTS = {"payload": "payload", "error": "error", "result": "result"}
ATTEMPT_TEXTS = {"error": "error", "traceback": "traceback"}


def limit() -> int:
    return jobs_settings.ADMIN_TEXT_CHARS


def head(column: str) -> Left:
    """The first ``limit() + 1`` characters of a column (one more than is shown, so a cut
    text can be told from one that fits exactly); jsonb is read as its text."""
    source = Cast(column, TextField()) if column in JSON_COLUMNS else F(column)
    return Left(source, limit() + 1)


@dataclass(frozen=True)
class ShownText:
    """A text as a page shows it: at most ``limit`` characters, and where the whole is."""

    text: str
    cut: bool
    url: str
    limit: int

    @classmethod
    def of(cls, text: str, url: str) -> ShownText:
        chars = limit()
        return cls(text[:chars], len(text) > chars, url, chars)

    @property
    def cut_note(self) -> str:
        return f"Shown cut at {self.limit:,} characters"

    def html(self) -> SafeString:
        shown = format_html('<pre class="job-pre">{}</pre>', self.text)
        if not self.cut:
            return shown
        return format_html(
            '{}<p class="job-cut quiet">{}: <a href="{}">the whole text</a>.</p>',
            shown,
            self.cut_note,
            self.url,
        )


def job_text_url(job_id: int, part: str) -> str:
    return reverse("admin:platform_job_text", args=[job_id, part])


def attempt_text_url(job_id: int, attempt_id: int, part: str) -> str:
    return reverse("admin:platform_job_attempt_text", args=[job_id, attempt_id, part])


class FullTextMixin(admin.ModelAdmin):
    """The URLs of the whole texts under a job's page."""

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view  # login and staff check
        return [
            path(
                "<int:object_id>/text/<str:part>/", wrap(self.job_text_view), name="{}_{}_text".format(*info)
            ),
            path(
                "<int:object_id>/attempts/<int:attempt_id>/<str:part>/",
                wrap(self.attempt_text_view),
                name="{}_{}_attempt_text".format(*info),
            ),
            *super().get_urls(),
        ]

    def job_text_view(self, request: HttpRequest, object_id: int, part: str) -> HttpResponse:
        if not can_view(request.user):
            raise PermissionDenied
        if part not in JOB_TEXTS:
            raise Http404(f"A job has no text {part!r}.")
        column = JOB_TEXTS[part]
        # jsonb as PostgreSQL writes it: the whole payload, without parsing it here.
        value = Cast(column, TextField()) if column in JSON_COLUMNS else F(column)
        text = Job.objects.filter(pk=object_id).values_list(value, flat=True).first()
        if text is None:
            raise Http404(f"Job #{object_id} does not exist.")
        return _whole(text, f"job-{object_id}-{part}", json=column in JSON_COLUMNS)

    def attempt_text_view(
        self, request: HttpRequest, object_id: int, attempt_id: int, part: str
    ) -> HttpResponse:
        if not can_view(request.user):
            raise PermissionDenied
        if part not in ATTEMPT_TEXTS:
            raise Http404(f"A failed try has no text {part!r}.")
        text = (
            JobAttempt.objects.filter(pk=attempt_id, job_id=object_id)
            .values_list(ATTEMPT_TEXTS[part], flat=True)
            .first()
        )
        if text is None:
            raise Http404(f"Job #{object_id} has no failed try #{attempt_id}.")
        return _whole(text, f"job-{object_id}-try-{attempt_id}-{part}", json=False)


def _whole(text: str, name: str, *, json: bool) -> HttpResponse:
    content_type = "application/json" if json else "text/plain; charset=utf-8"
    response = HttpResponse(text, content_type=content_type)
    response["Content-Disposition"] = f'inline; filename="{name}.{"json" if json else "txt"}"'
    return response
