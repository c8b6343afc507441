"""Fixtures for the store tests: a second, independent database session (the "other
worker")."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.support.database import raw_connection


@pytest.fixture
def other_connection() -> Iterator[psycopg.Connection]:
    """A second session, as another worker or an operator's shell would have."""
    conn = raw_connection(autocommit=False)
    yield conn
    conn.rollback()
    conn.close()
