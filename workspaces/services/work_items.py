"""workmanagement.sync: reconcile a work connection (Jira, ClickUp, Monday) into source items.

After a sync the connection's items are exactly the provider's: new ones added, changed
ones updated, vanished ones removed.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from jobs import Job, enqueue
from workspaces.models import SourceItem, WorkConnection
from workspaces.providers import work_tracker
from workspaces.services import Progress, load, no_progress
from workspaces.services.pull_requests import SyncResult

logger = logging.getLogger("workspaces.sync")

SYNC_JOB = "workmanagement.sync"


def request_sync(connection: WorkConnection) -> Job:
    """ "Sync now" and webhooks: enqueue a sync unless one is already queued or running
    (the sync's dedupe key is its connection)."""
    return enqueue(SYNC_JOB, {"connection_id": connection.pk})


def sync_connection(
    connection_id: int, progress: Progress = no_progress, now: datetime | None = None
) -> SyncResult:
    connection = load(WorkConnection, connection_id)
    if not connection.active:
        # Deactivated after the job was queued: nothing to do, and not an error.
        logger.info("Skipped sync of inactive connection #%s.", connection.pk)
        return SyncResult()
    progress(10, f"Fetching from {connection.get_kind_display()}")
    # Fetch outside the transaction: a provider call must not hold row locks.
    fetched = {item.external_id: item for item in work_tracker(connection.kind).items(connection)}
    progress(60, f"Reconciling {len(fetched)} items")
    created = updated = 0
    with transaction.atomic():
        # Locks the connection row, so two syncs of one connection apply one after the other.
        WorkConnection.objects.select_for_update().get(pk=connection.pk)
        existing = {item.external_id: item for item in connection.items.all()}
        for external_id, data in fetched.items():
            fields = {
                "title": data.title[:500],
                "status": data.status[:100],
                "description": data.description,
                "url": data.url[:500],
                "updated_at_source": data.updated_at,
            }
            item = existing.get(external_id)
            if item is None:
                SourceItem.objects.create(connection=connection, external_id=external_id, **fields)
                created += 1
            elif any(getattr(item, name) != value for name, value in fields.items()):
                for name, value in fields.items():
                    setattr(item, name, value)
                item.synced_at = timezone.now()
                item.save()
                updated += 1
        gone = [item.pk for external_id, item in existing.items() if external_id not in fetched]
        removed, _ = SourceItem.objects.filter(pk__in=gone).delete()
        WorkConnection.objects.filter(pk=connection.pk).update(last_synced_at=now or timezone.now())
    progress(100, f"{created} new, {updated} updated, {removed} removed")
    return SyncResult(created=created, updated=updated, removed=removed)
