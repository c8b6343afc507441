"""workmanagement.sync against a tracker in memory: full listings and incremental ones, items
marked deleted and restored, and what the connection keeps of each sync."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.providers import InMemoryTracker
from workspaces.errors import NotReady, ProviderUnavailable
from workspaces.models import SourceItem, WorkConnection
from workspaces.providers import WorkItemData, use_work_tracker, work_tracker
from workspaces.providers.stored import SnapshotTracker
from workspaces.services.work_items import OVERLAP, request_sync, request_syncs, sync_connection

from .factories import WorkConnectionFactory

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _live(connection: WorkConnection) -> dict[str, str]:
    return dict(connection.items.filter(deleted_at__isnull=True).values_list("external_id", "title"))


@pytest.fixture
def connection():
    return WorkConnectionFactory(kind="jira")


@pytest.fixture
def tracker(connection):
    board = InMemoryTracker(
        boards={
            connection.pk: [
                WorkItemData("P-1", "One", updated_at=_at(0)),
                WorkItemData("P-2", "Two", updated_at=_at(5)),
            ]
        }
    )
    with use_work_tracker("jira", board):
        yield board


def test_sync__first_sync_lists_everything_and_remembers_the_newest_change(connection, tracker):
    result = sync_connection(connection.pk, now=_at(10))

    assert result.full and (result.created, result.listed) == (2, 2)
    assert tracker.asked_since == [None]
    connection.refresh_from_db()
    assert connection.sync_state == {"updated_since": _at(5).isoformat()}
    assert (connection.full_synced_at, connection.last_synced_at, connection.item_count) == (
        _at(10),
        _at(10),
        2,
    )
    assert connection.last_sync_counts["created"] == 2 and connection.last_sync_counts["full"] is True


def test_sync__next_sync_asks_only_for_changes_since_the_newest_minus_the_overlap(
    connection, tracker, settings
):
    settings.WORK_SYNC_FULL_EVERY = 3600
    sync_connection(connection.pk, now=_at(10))
    tracker.boards[connection.pk] = [WorkItemData("P-2", "Two, renamed", updated_at=_at(15))]

    result = sync_connection(connection.pk, now=_at(20))

    assert tracker.asked_since[-1] == _at(5) - OVERLAP
    assert not result.full and (result.updated, result.deleted) == (1, 0)
    # P-1 was not listed, but an incremental sync cannot tell "unchanged" from "deleted".
    assert _live(connection) == {"P-1": "One", "P-2": "Two, renamed"}


def test_sync__a_full_listing_after_the_interval_marks_vanished_items_deleted_and_restores_returning_ones(
    connection, tracker, settings
):
    settings.WORK_SYNC_FULL_EVERY = 3600
    sync_connection(connection.pk, now=_at(0))
    tracker.boards[connection.pk] = [WorkItemData("P-2", "Two", updated_at=_at(5))]

    gone = sync_connection(connection.pk, now=_at(61))
    assert gone.full and gone.deleted == 1
    assert SourceItem.objects.get(external_id="P-1").deleted_at == _at(61)

    tracker.boards[connection.pk].append(WorkItemData("P-1", "One, back", updated_at=_at(62)))
    back = sync_connection(connection.pk, now=_at(63))
    assert (back.restored, back.updated) == (1, 0)
    assert _live(connection) == {"P-1": "One, back", "P-2": "Two"}
    connection.refresh_from_db()
    assert connection.item_count == 2


def test_sync__a_webhook_reporting_a_deletion_makes_the_next_sync_a_full_listing(
    connection, tracker, settings
):
    settings.WORK_SYNC_FULL_EVERY = 3600
    sync_connection(connection.pk, now=_at(0))
    tracker.boards[connection.pk] = [WorkItemData("P-2", "Two", updated_at=_at(5))]

    request_syncs([connection], full_listing=True)
    result = sync_connection(connection.pk, now=_at(1))

    assert result.full and result.deleted == 1
    assert tracker.asked_since[-1] is None


def test_sync__a_tracker_that_cannot_list_by_update_time_always_lists_everything(
    connection, tracker, settings
):
    settings.WORK_SYNC_FULL_EVERY = 3600
    tracker.incremental = False
    sync_connection(connection.pk, now=_at(0))
    sync_connection(connection.pk, now=_at(1))
    assert tracker.asked_since == [None, None]


def test_sync__a_failure_is_recorded_on_the_connection_and_cleared_by_the_next_sync(connection, tracker):
    tracker.down = True
    with pytest.raises(ProviderUnavailable):
        sync_connection(connection.pk, now=_at(0))
    connection.refresh_from_db()
    assert connection.last_error == "Jira did not answer." and connection.last_error_at is not None
    assert connection.last_synced_at is None and not connection.items.exists()

    tracker.down = False
    sync_connection(connection.pk, now=_at(1))
    connection.refresh_from_db()
    assert (connection.last_error, connection.last_error_at) == ("", None)


def test_request_sync__refuses_an_inactive_connection():
    with pytest.raises(NotReady, match="inactive"):
        request_sync(WorkConnectionFactory(inactive=True))


def test_work_tracker__the_stored_snapshot_is_the_embedded_default_and_says_so(settings):
    settings.WORK_TRACKER = "stored"
    tracker = work_tracker("monday")
    assert isinstance(tracker, SnapshotTracker)
    assert "embedded default" in tracker.label
