"""Acting on every failed job that matches a filter (Retry all, Dismiss all), not only the
rows of one page: the engine's own job type ``platform.bulk`` does it in batches.

An operator confirms "Retry all N matching" on the Background jobs page
(``jobs.admin.bulk_page``); the page enqueues one ``platform.bulk`` job with the action, the
filter (``Matching``) and N, and records who asked and for which filter in the admin log.
The job walks the matching jobs in primary-key order, ``BATCH`` at a time, each batch one
set-based statement of the store (``store.retry_many``, ``store.dismiss_many``), and
reports its progress after each ("12,000 of 50,000 queued again"), so the page stays fast
and the operator watches the job's own page. A try that dies part-way leaves the
batches it did done; the next try goes on with the jobs that still match.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime

from jobs.context import JobContext
from jobs.declare import job
from jobs.drivers import driver
from jobs.models import Job

TYPE = "platform.bulk"
BATCH = 1000
ERROR_TEXT_CHARS = 200
ACTIONS = {"retry": "queued again", "dismiss": "dismissed"}


@dataclass(frozen=True)
class Matching:
    """Failed jobs on the failed list (not dismissed), narrowed by queue, type, a text their
    error contains and when they failed. Every field is optional."""

    queue: str = ""
    type: str = ""
    error: str = ""
    failed_from: datetime | None = None
    failed_until: datetime | None = None

    def jobs(self) -> QuerySet[Job]:
        rows = Job.objects.filter(driver().failed(), dismissed_at__isnull=True)
        if self.queue:
            rows = rows.filter(queue=self.queue)
        if self.type:
            rows = rows.filter(type=self.type)
        if self.error:
            rows = rows.filter(error__contains=self.error)
        if self.failed_from is not None:
            rows = rows.filter(finished_at__gte=self.failed_from)
        if self.failed_until is not None:
            rows = rows.filter(finished_at__lt=self.failed_until)
        return rows

    def describe(self) -> str:
        """The filter as the admin log and the confirmation say it."""
        parts = [f"{name}={value}" for name, value in (("queue", self.queue), ("type", self.type)) if value]
        if self.error:
            parts.append(f"error contains {self.error!r}")
        if self.failed_from is not None:
            parts.append(f"failed from {self.failed_from:%Y-%m-%d %H:%M %Z}")
        if self.failed_until is not None:
            parts.append(f"failed before {self.failed_until:%Y-%m-%d %H:%M %Z}")
        return ", ".join(parts) or "every failed job"

    def payload(self) -> dict[str, Any]:
        fields = asdict(self)
        for name in ("failed_from", "failed_until"):
            if fields[name] is not None:
                fields[name] = fields[name].isoformat()
        return fields

    @classmethod
    def from_payload(cls, fields: dict[str, Any]) -> Matching:
        moments = {
            name: parse_datetime(fields[name]) if fields.get(name) else None
            for name in ("failed_from", "failed_until")
        }
        return cls(
            queue=str(fields.get("queue", "")),
            type=str(fields.get("type", "")),
            error=str(fields.get("error", ""))[:ERROR_TEXT_CHARS],
            **moments,
        )


@job(TYPE, queue="default", attempts=3, backoff=(5.0,))
def run_bulk(ctx: JobContext, *, action: str, matching: dict[str, Any], total: int, by: str = "") -> None:
    """Retry or dismiss every job that matches, in batches, reporting progress after each."""
    from jobs import store

    if action not in ACTIONS:
        raise ValueError(f"Unknown bulk action {action!r}; use one of {', '.join(ACTIONS)}.")
    verb = store.retry_many if action == "retry" else store.dismiss_many
    rows = Matching.from_payload(matching).jobs()
    done = refused = 0
    after = 0
    total = max(int(total), 1)
    ctx.report(0, f"0 of {total:,} {ACTIONS[action]}")
    while True:
        ids = list(rows.filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)[:BATCH])
        if not ids:
            break
        after = ids[-1]
        changed, unchanged = verb(ids)
        done, refused = done + changed, refused + unchanged
        left = f"; {refused:,} left unchanged" if refused else ""
        ctx.report(min(99, done * 100 // total), f"{done:,} of {total:,} {ACTIONS[action]}{left}")
    left = f"; {refused:,} left unchanged" if refused else ""
    ctx.report(
        100,
        f"{done:,} of {total:,} {ACTIONS[action]}{left} (by {by})"
        if by
        else f"{done:,} {ACTIONS[action]}{left}",
    )
