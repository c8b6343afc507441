"""The record of webhook deliveries: once per delivery id, what each led to, pruned after
``WEBHOOK_DELIVERIES_KEEP_DAYS``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from jobs import Job
from workspaces.models import WebhookDelivery

PRUNE_BATCH = 5000


@dataclass(frozen=True)
class Routed:
    """What a delivery led to: its outcome, a sentence for the operator, the jobs queued."""

    outcome: str  # a WebhookDelivery.Outcome
    detail: str
    jobs: list[Job] = field(default_factory=list)
    status: int = 202  # the HTTP answer: 202 Accepted, 200 for a ping


def seen(provider: str, delivery_id: str) -> bool:
    """Whether this delivery was recorded before; if so it is counted as a repeat."""
    return bool(
        WebhookDelivery.objects.filter(provider=provider, delivery_id=delivery_id).update(
            repeats=F("repeats") + 1
        )
    )


def record_once(provider: str, delivery_id: str, event: str, route: Callable[[], Routed]) -> Routed | None:
    """Route a delivery and record it, in one transaction; None for a delivery id already
    recorded.

    ``route`` queues its jobs inside the transaction, so when a twin of this delivery,
    arriving at the same moment, commits its record first, our insert fails on the unique
    constraint and takes our jobs with it: one delivery, one set of jobs.
    """
    try:
        with transaction.atomic():
            routed = route()
            WebhookDelivery.objects.create(
                provider=provider,
                delivery_id=delivery_id,
                event=event,
                outcome=routed.outcome,
                detail=routed.detail[:500],
                job_ids=[job.pk for job in routed.jobs],
            )
    except IntegrityError:
        if seen(provider, delivery_id):
            return None
        raise  # not our record's constraint: a real error
    return routed


def prune(now: datetime | None = None) -> int:
    """Delete the deliveries older than the retention, a batch at a time; returns how many."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.WEBHOOK_DELIVERIES_KEEP_DAYS)
    deleted = 0
    while True:
        batch = list(
            WebhookDelivery.objects.filter(received_at__lt=cutoff)
            .order_by("received_at")
            .values_list("pk", flat=True)[:PRUNE_BATCH]
        )
        if not batch:
            return deleted
        deleted += WebhookDelivery.objects.filter(pk__in=batch).delete()[0]
