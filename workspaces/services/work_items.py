"""workmanagement.sync: reconcile a work connection (Jira, ClickUp, Monday) into source items.

After a full listing the connection's items are exactly the provider's: new ones added,
changed ones updated, ones the provider no longer lists marked deleted (and brought back if
it lists them again). A full listing runs when none ran for ``WORK_SYNC_FULL_EVERY`` seconds,
when a webhook reports a deletion, or when the tracker cannot list by update time; between
them a sync asks only for the items changed since the last one (minus an overlap, so an item
changed while the last listing ran is not missed).

The connection keeps what the last sync did: ``last_synced_at``, its counts, the items
mirrored, and ``last_error`` (every failure of a sync, cleared by a sync that finishes).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import Job, RetryLater, enqueue
from workspaces.errors import NotReady
from workspaces.models import SourceItem, WorkConnection
from workspaces.providers import WorkItemData, work_tracker
from workspaces.providers.text import storable
from workspaces.services import Progress, load, no_progress

logger = logging.getLogger("workspaces.sync")

SYNC_JOB = "workmanagement.sync"
# An incremental sync asks from this long before the newest change the last one saw: the
# provider's clock, its search index's lag and an item changed mid-listing all fit in it.
OVERLAP = timedelta(minutes=5)
# The fields of a source item that come from the provider.
ITEM_FIELDS = ("title", "status", "description", "url", "updated_at_source")


@dataclass(frozen=True)
class WorkSyncResult:
    created: int = 0
    updated: int = 0
    deleted: int = 0  # marked deleted: the full listing no longer had them
    restored: int = 0  # marked deleted before, listed again
    listed: int = 0  # items the provider returned
    full: bool = False  # a full listing (deletions found) or only what changed

    def summary(self) -> str:
        kind = "full listing" if self.full else "changes only"
        return (
            f"{self.created} new, {self.updated} updated, {self.deleted} deleted, "
            f"{self.restored} restored ({kind}, {self.listed} listed)"
        )


def request_sync(connection: WorkConnection) -> Job:
    """ "Sync now" and webhooks: enqueue a sync unless one is already queued or running
    (the sync's dedupe key is its connection)."""
    if not connection.active:
        raise NotReady(f"Connection {connection} is inactive; activate it to sync it.")
    return enqueue(SYNC_JOB, {"connection_id": connection.pk})


def request_syncs(connections: Iterable[WorkConnection], *, full_listing: bool = False) -> list[Job]:
    """Webhooks: a sync for each connection; ``full_listing`` when the provider reported an
    item deleted or moved away, which only a full listing finds."""
    connections = list(connections)
    if full_listing:
        WorkConnection.objects.filter(pk__in=[c.pk for c in connections]).update(full_synced_at=None)
    return [request_sync(connection) for connection in connections]


def sync_connection(
    connection_id: int, progress: Progress = no_progress, now: datetime | None = None
) -> WorkSyncResult:
    connection = load(WorkConnection, connection_id)
    if not connection.active:
        # Deactivated after the job was queued: nothing to do, and not an error.
        logger.info("Skipped sync of inactive connection #%s.", connection.pk)
        return WorkSyncResult()
    now = now or timezone.now()
    tracker = work_tracker(connection.kind)
    since = (
        None
        if needs_full_listing(connection, now, incremental=tracker.incremental)
        else resume_point(connection)
    )
    # Every way this sync can fail is recorded on the connection, the listing's and the
    # database's alike: "Last error" is where an operator looks first.
    try:
        progress(10, f"Listing {'changes' if since else 'every item'} from {tracker.label}")
        # Fetch outside the transaction: a provider call must not hold row locks.
        fetched = {item.external_id: item for item in tracker.items(connection, updated_since=since)}
        progress(60, f"Reconciling {len(fetched)} items")
        result = _apply(connection, fetched, full=since is None, now=now)
    except RetryLater as wait:
        # Not a failure (the job waits without using an attempt), but why nothing changed.
        _record_error(connection, f"Waiting: {wait.reason}")
        raise
    except Exception as exc:
        _record_error(connection, str(exc) or type(exc).__name__)
        raise
    logger.info("Synced connection #%s: %s.", connection.pk, result.summary())
    progress(100, result.summary())
    return result


def needs_full_listing(connection: WorkConnection, now: datetime, *, incremental: bool) -> bool:
    if not incremental or connection.full_synced_at is None or resume_point(connection) is None:
        return True
    return now - connection.full_synced_at >= timedelta(seconds=settings.WORK_SYNC_FULL_EVERY)


def resume_point(connection: WorkConnection) -> datetime | None:
    """Where an incremental sync starts: the newest change seen, minus the overlap."""
    seen = parse_datetime(str(connection.sync_state.get("updated_since") or ""))
    return seen - OVERLAP if seen else None


def _apply(
    connection: WorkConnection, fetched: dict[str, WorkItemData], *, full: bool, now: datetime
) -> WorkSyncResult:
    created: list[SourceItem] = []
    changed: list[SourceItem] = []
    restored = 0
    with transaction.atomic():
        # Locks the connection row, so two syncs of one connection apply one after the other.
        WorkConnection.objects.select_for_update().get(pk=connection.pk)
        existing = {item.external_id: item for item in connection.items.all()}
        for external_id, data in fetched.items():
            fields = _fields(data)
            item = existing.get(external_id)
            if item is None:
                created.append(
                    SourceItem(connection=connection, external_id=external_id, synced_at=now, **fields)
                )
                continue
            if item.deleted_at is not None:
                item.deleted_at = None
                restored += 1
            elif all(getattr(item, name) == value for name, value in fields.items()):
                continue
            for name, value in fields.items():
                setattr(item, name, value)
            item.synced_at = now
            changed.append(item)
        SourceItem.objects.bulk_create(created, batch_size=500)
        SourceItem.objects.bulk_update(changed, [*ITEM_FIELDS, "synced_at", "deleted_at"], batch_size=500)
        deleted = 0
        if full:
            gone = [
                item.pk for key, item in existing.items() if key not in fetched and item.deleted_at is None
            ]
            deleted = SourceItem.objects.filter(pk__in=gone).update(deleted_at=now)
        result = WorkSyncResult(
            created=len(created),
            updated=len(changed) - restored,
            deleted=deleted,
            restored=restored,
            listed=len(fetched),
            full=full,
        )
        newest = max((item.updated_at for item in fetched.values() if item.updated_at), default=None)
        state = dict(connection.sync_state)
        previous = parse_datetime(str(state.get("updated_since") or ""))
        if newest and (previous is None or newest > previous):
            state["updated_since"] = newest.isoformat()
        changes = {
            "last_synced_at": now,
            "sync_state": state,
            "last_sync_counts": asdict(result),
            "item_count": connection.items.filter(deleted_at__isnull=True).count(),
            "last_error": "",
            "last_error_at": None,
        }
        if full:
            changes["full_synced_at"] = now
        WorkConnection.objects.filter(pk=connection.pk).update(**changes)
    return result


def _fields(data: WorkItemData) -> dict[str, object]:
    return {
        "title": data.title[:500],
        "status": data.status[:100],
        "description": data.description,
        "url": data.url[:500],
        "updated_at_source": data.updated_at,
    }


def _record_error(connection: WorkConnection, text: str) -> None:
    # Outside any transaction of the sync: the record stays whatever the job does next.
    WorkConnection.objects.filter(pk=connection.pk).update(
        last_error=storable(text)[:2000], last_error_at=timezone.now()
    )
