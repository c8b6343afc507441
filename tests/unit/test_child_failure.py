"""How a child records a failed try: the exception as text the store can always write."""

from __future__ import annotations

import pytest

from jobs import store
from jobs.models import JobAttempt
from jobs.worker.child import _failure


def failure_of(exc: Exception) -> store.Failure:
    try:
        raise exc
    except Exception as raised:  # noqa: BLE001 - the test's own exception
        return _failure(raised, retryable=True)


def test_failure__names_the_class_by_its_path_and_builtins_bare():
    assert failure_of(KeyError("k")).error_class == "KeyError"
    assert failure_of(store.InvalidTransition("no")).error_class == "jobs.errors.InvalidTransition"


@pytest.mark.django_db
def test_failure__a_nul_character_is_escaped_so_the_store_can_record_it():
    failure = failure_of(ValueError("bad\x00byte"))
    assert failure.message == "bad\\x00byte"
    assert "\x00" not in failure.traceback

    job = store.enqueue("test.fail", {})
    (claimed,) = store.claim("w1", ["default"], 1)
    assert store.fail("w1", claimed.id, claimed.attempt, failure) == "queued"
    assert JobAttempt.objects.get(job=job).error == "bad\\x00byte"
