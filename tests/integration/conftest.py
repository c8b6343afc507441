"""Helpers for the store tests: a second, independent database connection (the "other
worker"), and short-cuts that put a job into a given state through the store itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from jobs import store
from jobs.models import Job


def raw_connection(autocommit: bool = True) -> psycopg.Connection:
    """A plain psycopg connection to the test database, outside Django's connection."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=autocommit)


@pytest.fixture
def other_connection() -> Iterator[psycopg.Connection]:
    """A second session, as another worker or an operator's shell would have."""
    conn = raw_connection(autocommit=False)
    yield conn
    conn.rollback()
    conn.close()


def claim_one(worker: str, type_name: str = "test.noop", queue: str = "default") -> store.ClaimedJob:
    """Claim exactly one job; fails the test if none (or another type) comes back."""
    claimed = store.claim(worker, [queue], 1)
    assert len(claimed) == 1, f"expected one job to claim, got {claimed}"
    assert claimed[0].type == type_name
    return claimed[0]


def make_due(job_id: int) -> None:
    """Move a retry's run_at to now: the backoff has passed."""
    Job.objects.filter(pk=job_id).update(run_at=timezone.now() - timedelta(hours=1))


def make_silent(job_id: int, seconds: float) -> None:
    """Age a running job's heartbeat, as if its worker went quiet ``seconds`` ago."""
    Job.objects.filter(pk=job_id).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds))


@pytest.fixture
def enqueue() -> Callable[..., Job]:
    """``enqueue(type, **payload)`` with the store's defaults."""

    def add(type_name: str = "test.noop", /, **options: Any) -> Job:
        payload = options.pop("payload", {})
        return store.enqueue(type_name, payload, **options)

    return add
