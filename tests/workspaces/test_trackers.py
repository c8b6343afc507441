"""The three work-tracker connectors against local servers answering like Jira Cloud, ClickUp
and Monday (``tests/support/trackers.py``): paging, an item deleted between two syncs,
incremental listings, and every way an answer goes wrong. Nothing reaches the internet."""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from jobs import RetryLater
from tests.support import trackers as fakes
from tests.support.servers import SilentServer
from workspaces import credentials
from workspaces.errors import (
    ProviderAnswerInvalid,
    ProviderNotConfigured,
    ProviderRefused,
    ProviderUnavailable,
)
from workspaces.models import SourceItem, WorkConnection
from workspaces.providers import work_tracker
from workspaces.providers.clickup import ClickUpTracker
from workspaces.providers.jira import JiraTracker, adf_text, jql
from workspaces.providers.monday import MondayTracker, check_errors
from workspaces.services.work_items import sync_connection

from .factories import WorkConnectionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def live_trackers(settings):
    settings.WORK_TRACKER = "api"
    settings.WORK_SYNC_FULL_EVERY = 3600


def _ago(minutes: float) -> datetime:
    return timezone.now() - timedelta(minutes=minutes)


@dataclass
class Board:
    """One provider's stand-in, a connection to it, and a way to add and delete items there."""

    kind: str
    fake: Any
    connection: WorkConnection
    token: str

    def add(self, item_id: str, title: str, *, minutes_ago: float = 30) -> None:
        if self.kind == "jira":
            self.fake.add_issue(item_id, title, updated=_ago(minutes_ago))
        elif self.kind == "clickup":
            self.fake.add_task(item_id, title, updated=_ago(minutes_ago))
        else:
            self.fake.add_item(item_id, title, updated=_ago(minutes_ago))

    def delete(self, item_id: str) -> None:
        self.fake.delete(item_id)

    def ids(self, prefix: str = "") -> list[str]:
        return [f"PAY-{n}" if self.kind == "jira" else f"{prefix}{n}" for n in range(1, 6)]

    def sync(self, **kwargs: Any):
        return sync_connection(self.connection.pk, **kwargs)


def _board(kind: str, server) -> Board:
    if kind == "jira":
        fake = fakes.FakeJira(server)
        connection = WorkConnectionFactory(
            kind="jira",
            name="Payments",
            external_id="PAY",
            api_url=fake.url,
            account=fakes.JIRA_EMAIL,
            credential=credentials.encrypt(fakes.JIRA_TOKEN),
        )
        return Board(kind, fake, connection, fakes.JIRA_TOKEN)
    if kind == "clickup":
        fake = fakes.FakeClickUp(server)
        connection = WorkConnectionFactory(
            kind="clickup",
            name="Sprint list",
            external_id=fake.list_id,
            api_url=fake.api_url,
            credential=credentials.encrypt(fakes.CLICKUP_TOKEN),
        )
        return Board(kind, fake, connection, fakes.CLICKUP_TOKEN)
    fake = fakes.FakeMonday(server)
    connection = WorkConnectionFactory(
        kind="monday",
        name="Roadmap",
        external_id=fake.board_id,
        api_url=fake.api_url,
        credential=credentials.encrypt(fakes.MONDAY_TOKEN),
    )
    return Board(kind, fake, connection, fakes.MONDAY_TOKEN)


@pytest.fixture(params=["jira", "clickup", "monday"])
def board(request, httpserver) -> Board:
    return _board(request.param, httpserver)


def _live(connection: WorkConnection) -> set[str]:
    return set(connection.items.filter(deleted_at__isnull=True).values_list("external_id", flat=True))


# --- every connector -------------------------------------------------------------------------


def test_tracker__is_chosen_by_the_connections_kind():
    assert isinstance(work_tracker("jira"), JiraTracker)
    assert isinstance(work_tracker("clickup"), ClickUpTracker)
    assert isinstance(work_tracker("monday"), MondayTracker)


def test_sync__pages_through_every_item(board):
    for n, item_id in enumerate(board.ids(), start=1):
        board.add(item_id, f"Item {n}", minutes_ago=60 - n)

    result = board.sync()

    assert (result.created, result.listed) == (5, 5)
    assert _live(board.connection) == set(board.ids())
    assert len(board.fake.requests) == 3  # five items, two a page
    board.connection.refresh_from_db()
    assert board.connection.item_count == 5 and board.connection.last_error == ""


def test_sync__an_item_deleted_between_two_full_syncs_is_marked_deleted(board, settings):
    settings.WORK_SYNC_FULL_EVERY = 0  # every sync a full listing
    first, second, *_ = board.ids()
    board.add(first, "Stays")
    board.add(second, "Goes")
    board.sync()

    board.delete(second)
    result = board.sync()

    assert result.full and result.deleted == 1
    assert _live(board.connection) == {first}
    assert SourceItem.objects.get(external_id=second).deleted_at is not None


@pytest.mark.parametrize(
    ("status", "headers", "body", "error", "words"),
    [
        (500, {}, b'{"message": "Internal error"}', ProviderUnavailable, "answered 500"),
        (503, {}, b"<html>upstream down</html>", ProviderUnavailable, "answered 503"),
        (200, {}, b'{"issues": [', ProviderAnswerInvalid, "malformed JSON"),
    ],
    ids=["500", "503", "malformed-json"],
)
def test_sync__a_failing_provider_is_a_clear_failure_kept_on_the_connection(
    board, status, headers, body, error, words
):
    board.add(board.ids()[0], "Kept")
    board.fake.trouble.append((status, headers, body))

    with pytest.raises(error, match=words):
        board.sync()

    board.connection.refresh_from_db()
    assert words in board.connection.last_error and board.connection.last_error_at is not None
    assert board.connection.last_synced_at is None and not board.connection.items.exists()


def test_sync__a_listing_is_written_as_its_pages_arrive_and_stops_at_its_bound(httpserver, settings):
    settings.WORK_SYNC_MAX_ITEMS = 1_200
    board = _board("jira", httpserver)
    board.fake.page_size = 100
    board.fake.endless = True  # pages for ever
    WorkConnection.objects.filter(pk=board.connection.pk).update(full_synced_at=None)
    SourceItem.objects.create(
        connection=board.connection, external_id="PAY-0", title="Old", synced_at=timezone.now()
    )

    with pytest.raises(ProviderAnswerInvalid, match="more than 1,200 items .* WORK_SYNC_MAX_ITEMS"):
        board.sync()

    assert len(board.fake.requests) == 13  # the page that went past the bound was the last asked for
    listed = board.connection.items.filter(deleted_at__isnull=True).exclude(external_id="PAY-0")
    assert listed.count() == 1_000  # two batches of 500 written before the bound was reached
    assert (
        board.connection.items.get(external_id="PAY-0").deleted_at is None
    )  # an unfinished listing deletes nothing
    board.connection.refresh_from_db()
    assert "WORK_SYNC_MAX_ITEMS" in board.connection.last_error


def test_sync__a_listing_of_more_than_one_batch_reconciles_like_one(httpserver):
    board = _board("jira", httpserver)
    board.fake.page_size = 100
    for n in range(1, 1_201):
        board.fake.add_issue(f"PAY-{n}", f"Issue {n}", updated=_ago(60))
    SourceItem.objects.create(
        connection=board.connection, external_id="PAY-9999", title="Gone", synced_at=timezone.now()
    )

    result = board.sync()

    assert (result.created, result.listed, result.deleted, result.full) == (1_200, 1_200, 1, True)
    assert board.connection.items.filter(deleted_at__isnull=True).count() == 1_200
    assert board.connection.items.get(external_id="PAY-9999").deleted_at is not None


def test_sync__a_429_with_retry_after_asks_to_run_again_then_and_changes_nothing(board):
    board.add(board.ids()[0], "Kept")
    board.fake.trouble.append((429, {"Retry-After": "30"}, b'{"message": "Too many requests"}'))
    before = datetime.now(UTC)

    with pytest.raises(RetryLater) as wait:
        board.sync()

    assert before + timedelta(seconds=29) <= wait.value.at <= datetime.now(UTC) + timedelta(seconds=31)
    board.connection.refresh_from_db()
    assert board.connection.last_error.startswith("Waiting:")
    assert not board.connection.items.exists()


def test_sync__refused_credentials_fail_at_once_naming_the_connection_and_never_the_token(board, caplog):
    board.add(board.ids()[0], "Kept")
    revoked = "revoked-" + board.token
    board.connection.credential = credentials.encrypt(revoked)
    board.connection.save()
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ProviderRefused) as refused:
        board.sync()

    message = str(refused.value)
    assert board.connection.name in message and "refused" in message
    board.connection.refresh_from_db()
    basic = base64.b64encode(f"{fakes.JIRA_EMAIL}:{revoked}".encode()).decode()
    for text in (message, board.connection.last_error, caplog.text):
        assert revoked not in text and basic not in text
    assert "***" in message  # the stand-in echoed the credential; the error blanks it


def test_sync__a_connection_without_a_token_is_refused_before_any_request(board):
    board.connection.credential = ""
    board.connection.save()

    with pytest.raises(ProviderNotConfigured, match="no API token"):
        board.sync()
    assert board.fake.requests == []


# --- what differs by provider ----------------------------------------------------------------


@pytest.fixture
def jira(httpserver) -> Board:
    return _board("jira", httpserver)


@pytest.fixture
def clickup(httpserver) -> Board:
    return _board("clickup", httpserver)


@pytest.fixture
def monday(httpserver) -> Board:
    return _board("monday", httpserver)


def test_jira__maps_key_summary_status_description_and_browse_url(jira):
    jira.fake.add_issue(
        "PAY-7", "Refunds", updated=_ago(5), status="In Progress", text="First line\nSecond line"
    )

    jira.sync()

    item = SourceItem.objects.get()
    assert (item.external_id, item.title, item.status) == ("PAY-7", "Refunds", "In Progress")
    assert item.description == "First line\nSecond line"
    assert item.url == f"{jira.fake.url}/browse/PAY-7"
    request = jira.fake.requests[0]
    assert request.args["jql"] == 'project = "PAY" ORDER BY updated ASC'
    assert request.args["fields"] == "summary,status,description,updated"


def test_jira__an_incremental_sync_asks_for_issues_updated_in_the_last_minutes(jira):
    jira.add("PAY-1", "Oldest", minutes_ago=900)
    jira.add("PAY-2", "Old", minutes_ago=600)
    jira.sync()
    jira.add("PAY-3", "New", minutes_ago=1)

    result = jira.sync()

    # The newest issue already seen comes again (the overlap); the older one does not.
    assert not result.full and (result.created, result.listed) == (1, 2)
    assert "AND updated >= -" in jira.fake.requests[-1].args["jql"]
    assert _live(jira.connection) == {"PAY-1", "PAY-2", "PAY-3"}


def test_jira__jql_uses_relative_minutes_so_the_token_owners_time_zone_does_not_matter():
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert jql("PAY", now - timedelta(minutes=90, seconds=1), now=now) == (
        'project = "PAY" AND updated >= -91m ORDER BY updated ASC'
    )


def test_jira__adf_descriptions_read_as_plain_text():
    doc = {
        "type": "doc",
        "content": [
            {"type": "heading", "content": [{"type": "text", "text": "Why"}]},
            {
                "type": "bulletList",
                "content": [
                    {
                        "type": "listItem",
                        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "one"}]}],
                    },
                    {
                        "type": "listItem",
                        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "two"}]}],
                    },
                ],
            },
        ],
    }
    assert adf_text(doc) == "Why\none\ntwo"


def test_clickup__lists_closed_tasks_and_subtasks_and_pages_by_number(clickup):
    clickup.fake.add_task("t1", "Open one", updated=_ago(10))
    clickup.fake.add_task("t2", "Done one", updated=_ago(9), status="complete", closed=True)

    clickup.sync()

    assert _live(clickup.connection) == {"t1", "t2"}
    assert SourceItem.objects.get(external_id="t2").status == "complete"
    args = clickup.fake.requests[0].args
    assert (args["page"], args["include_closed"], args["subtasks"]) == ("0", "true", "true")


def test_clickup__an_incremental_sync_asks_for_tasks_updated_after_the_last_one_seen(clickup):
    clickup.add("t0", "Oldest", minutes_ago=900)
    clickup.add("t1", "Old", minutes_ago=600)
    clickup.sync()
    clickup.add("t2", "New", minutes_ago=1)

    result = clickup.sync()

    # The newest task already seen comes again (the overlap); the older one does not.
    assert not result.full and (result.created, result.listed) == (1, 2)
    seen = SourceItem.objects.get(external_id="t1").updated_at_source
    asked = int(clickup.fake.requests[-1].args["date_updated_gt"])
    assert asked == int((seen - timedelta(minutes=5)).timestamp() * 1000)


def test_clickup__a_rate_limit_waits_for_x_ratelimit_reset(clickup):
    reset = int((datetime.now(UTC) + timedelta(seconds=40)).timestamp())
    clickup.fake.trouble.append(
        (
            429,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
            b'{"err": "Rate limit reached"}',
        )
    )
    with pytest.raises(RetryLater) as wait:
        clickup.sync()
    assert wait.value.at == datetime.fromtimestamp(reset, UTC) + timedelta(seconds=1)


def test_monday__maps_status_column_and_pages_by_cursor(monday):
    monday.fake.add_item("11", "Launch", updated=_ago(3), status="Done")
    for n in range(2, 6):
        monday.fake.add_item(str(10 + n), f"Item {n}", updated=_ago(3))

    monday.sync()

    item = SourceItem.objects.get(external_id="11")
    assert (item.title, item.status) == ("Launch", "Done")
    queries = [json.loads(request.get_data())["query"] for request in monday.fake.requests]
    assert "items_page" in queries[0] and all("next_items_page" in query for query in queries[1:])
    assert monday.fake.requests[0].headers["API-Version"]


def test_monday__a_complexity_error_in_a_200_answer_reschedules(monday):
    monday.add("1", "Kept")
    body = {
        "errors": [
            {
                "message": "Complexity budget exhausted",
                "extensions": {
                    "code": "COMPLEXITY_BUDGET_EXHAUSTED",
                    "retry_in_seconds": 45,
                    "status_code": 429,
                },
            }
        ]
    }
    monday.fake.trouble.append((200, {}, json.dumps(body).encode()))
    before = datetime.now(UTC)

    with pytest.raises(RetryLater) as wait:
        monday.sync()

    assert before + timedelta(seconds=44) <= wait.value.at <= datetime.now(UTC) + timedelta(seconds=46)


def test_monday__a_board_the_token_cannot_see_fails_at_once(monday):
    monday.connection.external_id = "999"
    monday.connection.save()
    with pytest.raises(ProviderRefused, match="no board 999"):
        monday.sync()


@pytest.mark.parametrize(
    ("answer", "raised"),
    [
        (
            {"error_code": "ComplexityException", "status_code": 429, "error_message": "reset in 7 seconds"},
            RetryLater,
        ),
        (
            {"errors": [{"message": "Daily limit", "extensions": {"code": "DAILY_LIMIT_EXCEEDED"}}]},
            RetryLater,
        ),
        (
            {
                "errors": [
                    {
                        "message": "User unauthorized",
                        "extensions": {"code": "UserUnauthorizedException", "status_code": 403},
                    }
                ]
            },
            ProviderRefused,
        ),
        ({"errors": [{"message": "Field 'x' doesn't exist"}]}, ProviderAnswerInvalid),
    ],
    ids=["legacy-complexity", "daily", "unauthorized", "query-error"],
)
def test_monday__errors_inside_the_answer_read_like_http_statuses(answer, raised):
    now = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)
    with pytest.raises(raised) as caught:
        check_errors(answer, "connection #1", now=now)
    if answer.get("error_code"):
        assert caught.value.at == now + timedelta(seconds=7)
    elif raised is RetryLater:
        assert caught.value.at == datetime(2026, 3, 2, 0, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize("seconds", [3e9, 10**30, float("inf"), float("nan")])
def test_monday__a_retry_in_seconds_no_clock_holds_is_still_a_wait_within_six_hours(seconds):
    now = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)
    answer = {
        "errors": [
            {
                "message": "Budget",
                "extensions": {"code": "COMPLEXITY_BUDGET_EXHAUSTED", "retry_in_seconds": seconds},
            }
        ]
    }
    with pytest.raises(RetryLater) as caught:
        check_errors(answer, "connection #1", now=now)
    assert now < caught.value.at <= now + timedelta(hours=6)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["jira", "clickup", "monday"])
def test_sync__a_provider_that_never_answers_times_out_as_a_retryable_failure(kind, settings):
    settings.HTTP_TIMEOUT = 0.5
    server = SilentServer()
    try:
        connection = WorkConnectionFactory(
            kind=kind,
            external_id="PAY" if kind == "jira" else "123",
            api_url=server.url,
            account=fakes.JIRA_EMAIL,
            credential=credentials.encrypt("a-token-1234"),
        )
        with pytest.raises(ProviderUnavailable, match="did not answer within 0.5s"):
            sync_connection(connection.pk)
        assert server.accepted  # the request reached the server and waited there
    finally:
        server.close()


# --- provider text the database cannot store as it is -------------------------------------------


def test_sync__nul_characters_and_lone_surrogates_from_the_provider_are_stored_cleaned(board):
    """One item holding ``\\u0000`` must not stop the sync of every other item."""
    first, second = board.ids()[:2]
    board.add(first, "Refunds\u0000 fail")
    board.add(second, "Broken \ud800 text")

    result = board.sync()

    assert result.created == 2
    titles = dict(board.connection.items.values_list("external_id", "title"))
    assert titles == {first: "Refunds fail", second: "Broken \ufffd text"}
    board.connection.refresh_from_db()
    assert board.connection.last_error == ""


def test_sync__a_failure_while_storing_the_items_is_recorded_on_the_connection(clickup):
    """Not only the listing's failures: one the database raises is "Last error" too."""
    clickup.add("t" * 300, "An id longer than any column")

    with pytest.raises(Exception):  # noqa: B017 - whatever the database calls it
        clickup.sync()

    clickup.connection.refresh_from_db()
    assert clickup.connection.last_error != "" and clickup.connection.last_error_at is not None
    assert not clickup.connection.items.exists()
