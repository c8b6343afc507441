"""How the section writes durations, moments and statuses: short, and exact on hover.

An operator reads ``finished 3 min ago`` at a glance; the exact time sits in the element's
title (lists) or next to it (a job's own page).
"""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.durations import format_duration
from jobs.models import Job, Status

#: The list's error cell is clamped to two lines by CSS; the text sent is cut well beyond
#: what two lines can show. The cell's title holds more of it (the list reads no more than
#: that from the database) and the job's page the whole.
ERROR_PREVIEW_CHARS = 160
ERROR_TITLE_CHARS = 1_000


def relative(moment: datetime, now: datetime) -> str:
    """``3 min ago`` or ``in 2 min``: what an operator reads at a glance."""
    delta = moment - now
    if abs(delta.total_seconds()) < 1:
        return "now"
    if delta.total_seconds() > 0:
        return f"in {format_duration(delta)}"
    return f"{format_duration(-delta)} ago"


def local_time(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S %Z")


def timestamp(moment: datetime | None, now: datetime, prefix: str = "") -> SafeString | str:
    """A relative moment for a list cell, the exact one in its title."""
    if moment is None:
        return "—"
    return format_html(
        '<time datetime="{}" title="{}">{}{}</time>',
        timezone.localtime(moment).isoformat(),
        local_time(moment),
        prefix,
        relative(moment, now),
    )


def exact_timestamp(moment: datetime | None) -> SafeString | str:
    """To the millisecond, with how long ago: a job's own page is where times get compared."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return format_html(
        '<time datetime="{}">{}</time> <span class="quiet">({})</span>',
        local.isoformat(),
        local.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + local.strftime(" %Z"),
        relative(moment, timezone.now()),
    )


def job_moment(job: Job, now: datetime) -> SafeString | str:
    """The moment that matters for a job's status: finished, started, due, or its next try."""
    if job.finished_at:
        return timestamp(job.finished_at, now, "finished ")
    if job.status == Status.RUNNING:
        return timestamp(job.started_at, now, "started ")
    if waiting_for_retry(job):
        return timestamp(job.run_at, now, "runs again " if job.run_at > now else "due ")
    if job.run_at > now:
        return timestamp(job.run_at, now, "due ")
    return timestamp(job.created_at, now, "queued ")


def shorten(text: str, limit: int = ERROR_PREVIEW_CHARS) -> str:
    """One line of at most ``limit`` characters: whitespace folded, the rest cut with "…"."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_badge(status: str) -> SafeString:
    return format_html('<span class="job-status job-status--{}">{}</span>', status, status)


def waiting_for_retry(job: Job) -> bool:
    """Queued again after a failed try (or a lost worker): it has used up attempts."""
    return job.waiting_for_retry


def shows_error(job: Job, error: str) -> bool:
    """Failed, or waiting for its next try after one (``error`` is what the row read of
    its error): the error is what matters then."""
    return job.status == Status.FAILED or (waiting_for_retry(job) and bool(error))


def action_button(job: Job, verb: str, label: str) -> SafeString:
    """A row's Retry or Cancel: a button of the page's one hidden POST form (forms cannot nest)."""
    return format_html(
        '<button type="submit" class="button job-action job-action--{}" form="job-row-action" '
        'formaction="{}" data-job="{}">{}</button>',
        verb,
        reverse(f"admin:platform_job_{verb}", args=[job.pk]),
        job.pk,
        label,
    )
