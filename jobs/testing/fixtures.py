"""pytest fixtures of ``jobs.testing``: ``pytest_plugins = ["jobs.testing.fixtures"]`` in a
project's ``conftest.py`` (``docs/testing.md``). Needs pytest-django."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from jobs import testing


class JobsTester:
    """``jobs.testing``'s helpers as one object, handed to a test by the ``jobs_tester`` fixture."""

    enqueued = staticmethod(testing.enqueued)
    assert_enqueued = staticmethod(testing.assert_enqueued)
    assert_not_enqueued = staticmethod(testing.assert_not_enqueued)
    run = staticmethod(testing.run_job)
    perform = staticmethod(testing.perform)

    def drain(
        self, queue: str | Iterable[str] | None = None, *, limit: int = testing.DRAIN_LIMIT
    ) -> testing.Drained:
        return testing.drain(queue, limit=limit)

    def payloads(self, job_type: Any, **wanted: Any) -> list[Mapping[str, Any]]:
        """The payloads of the queued jobs of ``job_type`` (holding ``wanted``), oldest first."""
        return [job.payload for job in testing.enqueued(job_type, payload=wanted)]


@pytest.fixture
def jobs_tester(db: None) -> JobsTester:
    """The helpers of ``jobs.testing``, with the database open to the test."""
    return JobsTester()
