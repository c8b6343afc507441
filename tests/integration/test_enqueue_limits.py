"""What enqueue refuses, and how: a payload, a dedupe key or a run_at that the engine cannot
store (or should not) is refused with the engine's own error before any statement runs, so
the caller's transaction stays usable. The same rules hold for ``enqueue``,
``enqueue_many`` and ``JobFunction.using``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

import jobs
from jobs.models import Job
from tests.jobs_app.tasks import keyed, noop

pytestmark = pytest.mark.django_db


def _deeply_nested(levels: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return {"tree": value}


# Each enqueues one payload through one of the three doors.
DOORS: dict[str, Callable[[dict[str, Any]], object]] = {
    "enqueue": lambda payload: jobs.enqueue("test.noop", payload),
    "enqueue_many": lambda payload: jobs.enqueue_many("test.noop", [{"ok": 1}, payload]),
    "using": lambda payload: noop.using(priority="high").enqueue(**payload),
}

REFUSED_PAYLOADS = {
    "nul-in-a-value": ({"name": "a\x00b"}, "NUL character in payload"),
    "nul-in-a-key": ({"na\x00me": 1}, "NUL"),
    "nul-deep-inside": ({"files": [{"name": "ok"}, {"name": "x\x00"}]}, r"payload\['files'\]\[1\]\['name'\]"),
    "lone-surrogate-in-a-value": ({"subject": "\ud800"}, "surrogate"),
    "lone-surrogate-in-a-key": ({"s\udc00": 1}, "surrogate"),
    "lone-surrogate-deep-inside": ({"list": ["fine", {"k": "\udfff"}]}, "surrogate"),
    "nesting-deeper-than-the-limit": (_deeply_nested(40), "nested deeper than 32"),
    "nesting-beyond-pythons-recursion-limit": (_deeply_nested(100_000), "nested deeper than 32"),
    "larger-than-the-limit": ({"blob": "x" * (64 * 1024)}, "JOBS_MAX_PAYLOAD_BYTES"),
    "nan": ({"ratio": float("nan")}, "not JSON-safe"),
}


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("payload, message", REFUSED_PAYLOADS.values(), ids=REFUSED_PAYLOADS.keys())
def test_payload__refused_with_invalid_payload_before_any_statement(door, payload, message):
    with CaptureQueriesContext(connection) as queries, pytest.raises(jobs.InvalidPayload, match=message):
        DOORS[door](payload)
    assert len(queries) == 0  # refused before the database saw anything
    assert not Job.objects.exists()  # and the caller's transaction is still usable


def test_payload__its_own_keys_must_be_strings_as_they_become_keyword_arguments():
    for attempt in (
        lambda: jobs.enqueue("test.noop", {1: "one"}),
        lambda: jobs.enqueue_many("test.noop", [{"ok": 1}, {None: "x"}]),
    ):
        with pytest.raises(jobs.InvalidPayload, match="keys must be strings"):
            attempt()
    assert not Job.objects.exists()


def test_payload__the_size_limit_is_a_setting_counted_in_bytes_of_json():
    with override_settings(JOBS_MAX_PAYLOAD_BYTES=20):
        jobs.enqueue("test.noop", {"n": "x" * 11})  # {"n": "xxxxxxxxxxx"} is 20 bytes
        with pytest.raises(jobs.InvalidPayload, match="21 bytes of JSON; at most 20"):
            jobs.enqueue("test.noop", {"n": "x" * 12})
    assert Job.objects.count() == 1


def test_payload__the_depth_limit_is_a_setting():
    with override_settings(JOBS_MAX_PAYLOAD_DEPTH=3):
        jobs.enqueue("test.noop", {"a": {"b": [1]}})  # the payload itself is level 1
        with pytest.raises(jobs.InvalidPayload, match="nested deeper than 3"):
            jobs.enqueue("test.noop", {"a": {"b": [[1]]}})


def test_payload__text_beyond_ascii_and_paired_characters_are_kept():
    payload = {"subject": "Rechnung für März 😀", "ids": (1, 2), "ok": True, "none": None, "x": 1.5}
    siblings = {f"list{n}": [n] for n in range(40)}  # more brackets than levels, all shallow
    job = jobs.enqueue("test.noop", {**payload, **siblings, "path": "C:\\u0000"})
    job.refresh_from_db()
    assert job.payload == {**payload, **siblings, "ids": [1, 2], "path": "C:\\u0000"}


# --- dedupe keys ------------------------------------------------------------------------------

REFUSED_KEYS = {
    "10-kb": ("k" * 10_000, "at most 255 characters"),
    "integer": (7, "must be a string"),
    "bytes": (b"key", "must be a string"),
    "nul": ("key\x00", "NUL"),
    "lone-surrogate": ("key\ud800", "surrogate"),
}


@pytest.mark.parametrize("key, message", REFUSED_KEYS.values(), ids=REFUSED_KEYS.keys())
def test_dedupe_key__a_callers_key_is_refused_with_invalid_job_option(key, message):
    attempts = [
        lambda: jobs.enqueue("test.noop", {}, dedupe_key=key),
        lambda: jobs.enqueue_many("test.noop", [{}, {}], dedupe_keys=["fine", key]),
        lambda: noop.using(dedupe_key=key),
    ]
    _each_refused_before_any_statement(attempts, message)


def test_dedupe_key__a_key_made_from_a_long_payload_field_is_refused_with_invalid_payload():
    with pytest.raises(jobs.InvalidPayload, match="at most 255 characters"):
        jobs.enqueue("test.keyed", {"thing_id": "x" * 10_000})
    with pytest.raises(jobs.InvalidPayload, match="at most 255 characters"):
        jobs.enqueue_many("test.keyed", [{"thing_id": 1}, {"thing_id": "x" * 300}])
    with pytest.raises(jobs.InvalidPayload, match="at most 255 characters"):
        keyed.enqueue(thing_id="x" * 300)
    assert not Job.objects.exists()
    assert jobs.enqueue("test.keyed", {"thing_id": "x" * 249}).dedupe_key == "thing:" + "x" * 249


# --- run_at -----------------------------------------------------------------------------------

REFUSED_RUN_AT = {
    "infinity": ("infinity", "must be a datetime"),
    "tomorrow": ("tomorrow", "must be a datetime"),
    "a-date": (date(2030, 1, 1), "must be a datetime"),
    "a-timestamp": (1_900_000_000, "must be a datetime"),
    "naive": (datetime(2030, 1, 1, 12, 0), "timezone-aware"),
    "year-1": (datetime(1, 1, 1, tzinfo=UTC), "between"),
    "year-9999": (datetime(9999, 12, 31, tzinfo=UTC), "between"),
    "two-days-ago": (timezone.now() - timedelta(days=2), "between"),
    "two-years-ahead": (timezone.now() + timedelta(days=730), "between"),
}


@pytest.mark.parametrize("run_at, message", REFUSED_RUN_AT.values(), ids=REFUSED_RUN_AT.keys())
def test_run_at__refused_with_invalid_job_option_before_any_statement(run_at, message):
    attempts = [
        lambda: jobs.enqueue("test.noop", {}, run_at=run_at),
        lambda: jobs.enqueue_many("test.noop", [{}], run_at=run_at),
        lambda: noop.using(run_at=run_at),
    ]
    _each_refused_before_any_statement(attempts, message)


def test_run_at__within_the_bounds_is_kept_as_given():
    soon_past = timezone.now() - timedelta(hours=1)
    far = timezone.now() + timedelta(days=360)
    assert jobs.enqueue("test.noop", {}, run_at=soon_past).run_at == soon_past
    assert noop.using(run_at=far).enqueue().run_at == far
    assert jobs.enqueue_many("test.noop", [{}], run_at=far) == 1
    assert Job.objects.filter(run_at=far).count() == 2


def test_run_at__the_furthest_moment_ahead_is_a_setting():
    with override_settings(JOBS_MAX_RUN_AT_DAYS=1):
        jobs.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=23))
        with pytest.raises(jobs.InvalidJobOption, match="JOBS_MAX_RUN_AT_DAYS"):
            jobs.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=25))


# --- other options ----------------------------------------------------------------------------


def test_priority__an_unknown_one_is_refused_with_invalid_job_option():
    for attempt in (
        lambda: jobs.enqueue("test.noop", {}, priority="urgent"),
        lambda: jobs.enqueue_many("test.noop", [{}], priority="urgent"),
        lambda: noop.using(priority="urgent"),
        lambda: jobs.enqueue("test.noop", {}, priority=0),
    ):
        with pytest.raises(jobs.InvalidJobOption, match="Unknown priority"):
            attempt()
    assert not Job.objects.exists()


def _each_refused_before_any_statement(attempts: list, message: str) -> None:
    """Every call raises InvalidJobOption matching ``message`` having sent no statement."""
    for attempt in attempts:
        with (
            CaptureQueriesContext(connection) as queries,
            pytest.raises(jobs.InvalidJobOption, match=message),
        ):
            attempt()
        assert len(queries) == 0
    assert not Job.objects.exists()
