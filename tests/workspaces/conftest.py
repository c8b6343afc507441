"""Fixtures of the workspace tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer


@pytest.fixture
def other_host() -> Iterator[HTTPServer]:
    """A second server, on another host name than ``httpserver`` (127.0.0.1, not localhost)."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()
