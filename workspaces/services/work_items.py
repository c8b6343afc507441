"""workmanagement.sync: reconcile a work connection (Jira, ClickUp, Monday) into source items.

After a full listing the connection's items are exactly the provider's: new ones added,
changed ones updated, ones the provider no longer lists marked deleted (and brought back if
it lists them again). A full listing runs when none ran for ``WORK_SYNC_FULL_EVERY`` seconds,
when a webhook reports a deletion, or when the tracker cannot list by update time; between
them a sync asks only for the items changed since the last one (minus an overlap, so an item
changed while the last listing ran is not missed).

Items are written as the provider's pages arrive, ``BATCH`` at a time, and a listing stops
past ``WORK_SYNC_MAX_ITEMS``: only the ids seen are held, never the whole listing. Deletions
are marked, and the sync recorded, only once a listing has ended.

The connection keeps what the last sync did: ``last_synced_at``, its counts, the items
mirrored, and ``last_error`` (every failure of a sync, cleared by a sync that finishes).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import Job, RetryLater, enqueue
from workspaces import job_types
from workspaces.errors import NotReady, ProviderAnswerInvalid
from workspaces.models import SourceItem, WorkConnection
from workspaces.providers import WorkItemData, work_tracker
from workspaces.providers.text import storable
from workspaces.services import Progress, load, no_progress

logger = logging.getLogger("workspaces.sync")

SYNC_JOB = job_types.SYNC_WORK_CONNECTION
# An incremental sync asks from this long before the newest change the last one saw: the
# provider's clock, its search index's lag and an item changed mid-listing all fit in it.
OVERLAP = timedelta(minutes=5)
# Items written per transaction as a listing arrives.
BATCH = 500
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
    progress(10, f"Listing {'changes' if since else 'every item'} from {tracker.label}")
    listing = _Listing()
    # Every way this sync can fail is recorded on the connection, the listing's and the
    # database's alike: "Last error" is where an operator looks first.
    try:
        # Written a batch at a time as the pages arrive, each batch in a transaction of its
        # own: a provider call must not hold row locks, and a listing is never held whole.
        for batch in _batches(tracker.items(connection, updated_since=since), connection, listing):
            _write(connection, batch, listing, now)
            progress(min(90, 10 + len(listing.seen) // BATCH), f"{len(listing.seen):,} items listed")
        result = _finish(connection, listing, full=since is None, now=now)
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


@dataclass
class _Listing:
    """What the batches written so far of one listing amount to: only ids and counts."""

    seen: set[str] = field(default_factory=set)
    created: int = 0
    updated: int = 0
    restored: int = 0
    newest: datetime | None = None


def _batches(
    items: Iterable[WorkItemData], connection: WorkConnection, listing: _Listing
) -> Iterator[dict[str, WorkItemData]]:
    """The listing in batches of ``BATCH`` items; past ``WORK_SYNC_MAX_ITEMS`` items the
    listing stops (a provider that pages for ever, or a connection pointed at far more than
    one project or board)."""
    limit = settings.WORK_SYNC_MAX_ITEMS
    batch: dict[str, WorkItemData] = {}
    for item in items:
        new = item.external_id not in listing.seen and item.external_id not in batch
        if new and len(listing.seen) + len(batch) >= limit:
            raise ProviderAnswerInvalid(
                f"The provider lists more than {limit:,} items for {connection}; the limit is "
                "WORK_SYNC_MAX_ITEMS. The items listed so far are kept; none was marked deleted."
            )
        batch[item.external_id] = item
        if len(batch) >= BATCH:
            yield batch
            batch = {}
    if batch:
        yield batch


def _write(
    connection: WorkConnection, batch: dict[str, WorkItemData], listing: _Listing, now: datetime
) -> None:
    """Create, update and restore the items of one batch."""
    created: list[SourceItem] = []
    changed: list[SourceItem] = []
    restored = 0
    with transaction.atomic():
        # Locks the connection row, so two syncs of one connection write one after the other.
        WorkConnection.objects.select_for_update().get(pk=connection.pk)
        existing = {item.external_id: item for item in connection.items.filter(external_id__in=list(batch))}
        for external_id, data in batch.items():
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
    # An item listed again in a later batch (a page boundary that moved) counts once.
    listing.created += len([item for item in created if item.external_id not in listing.seen])
    listing.updated += len([item for item in changed if item.external_id not in listing.seen]) - restored
    listing.restored += restored
    listing.seen.update(batch)
    newest = max((item.updated_at for item in batch.values() if item.updated_at), default=None)
    if newest and (listing.newest is None or newest > listing.newest):
        listing.newest = newest


def _finish(connection: WorkConnection, listing: _Listing, *, full: bool, now: datetime) -> WorkSyncResult:
    """After a whole listing: mark deleted what a full one no longer had, and record the sync."""
    with transaction.atomic():
        # Locks the connection row, so two syncs of one connection finish one after the other.
        WorkConnection.objects.select_for_update().get(pk=connection.pk)
        deleted = 0
        if full:
            live = connection.items.filter(deleted_at__isnull=True).values_list("pk", "external_id")
            gone = [pk for pk, external_id in live.iterator() if external_id not in listing.seen]
            for start in range(0, len(gone), BATCH):
                deleted += SourceItem.objects.filter(pk__in=gone[start : start + BATCH]).update(
                    deleted_at=now
                )
        result = WorkSyncResult(
            created=listing.created,
            updated=listing.updated,
            deleted=deleted,
            restored=listing.restored,
            listed=len(listing.seen),
            full=full,
        )
        state = dict(connection.sync_state)
        previous = parse_datetime(str(state.get("updated_since") or ""))
        if listing.newest and (previous is None or listing.newest > previous):
            state["updated_since"] = listing.newest.isoformat()
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
