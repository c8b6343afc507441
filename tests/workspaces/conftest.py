"""Fixtures of the workspace tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.support.git_repos import Origin


@pytest.fixture
def other_host() -> Iterator[HTTPServer]:
    """A second server, on another host name than ``httpserver`` (127.0.0.1, not localhost)."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def repositories_root(settings, tmp_path) -> Path:
    """The checkouts in the test's own folder, each git run bounded by a generous timeout
    (only a bound: a loaded machine must not turn a slow fetch into a failure)."""
    settings.REPOSITORIES_ROOT = tmp_path / "checkouts"
    settings.GIT_TIMEOUT = 120
    return settings.REPOSITORIES_ROOT


@pytest.fixture
def origin(tmp_path) -> Origin:
    """An empty repository, as a test's git host would hold it."""
    return Origin(tmp_path / "origin")
