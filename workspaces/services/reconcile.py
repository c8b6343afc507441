"""The reconcile timer (every 15 minutes): queue a sync for each active work connection
last synced longer ago than that, unless one is already queued or running for it.

Webhooks are the fast path; this is the safety net.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import OuterRef, Q, QuerySet
from django.utils import timezone

from jobs import enqueue_many, has_active_job
from workspaces.models import WorkConnection
from workspaces.services.work_items import SYNC_JOB

STALE_AFTER = timedelta(minutes=15)


def due_connections(now: datetime | None = None) -> QuerySet[WorkConnection]:
    """Active connections never synced or synced before the cutoff, with no sync queued or running."""
    cutoff = (now or timezone.now()) - STALE_AFTER
    return (
        WorkConnection.objects.filter(active=True)
        .filter(Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=cutoff))
        .exclude(has_active_job(SYNC_JOB, connection_id=OuterRef("pk")))
        .order_by("id")
    )


def enqueue_due_syncs(now: datetime | None = None) -> int:
    """Returns how many syncs were queued.

    The filter keeps the count honest; the sync's dedupe key (its connection) is what
    makes a concurrent "Sync now" or a second reconcile unable to add a twin.
    """
    ids = list(due_connections(now).values_list("id", flat=True))
    if not ids:
        return 0
    return enqueue_many(SYNC_JOB, [{"connection_id": pk} for pk in ids])
