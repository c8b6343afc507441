"""``manage.py demo_connections`` on the embedded defaults (SQLite under a fresh VAR_DIR, the
stored tracker): signed webhooks queue syncs that a real runworker runs; forged and replayed
ones queue nothing; a deletion reaches the mirror."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.demo import run_demo

pytestmark = pytest.mark.slow


def test_demo_connections__webhooks_keep_the_connection_in_step_on_the_embedded_tracker(tmp_path: Path):
    out = run_demo("demo_connections", tmp_path / "var")
    first, second = out.split("\n2. ")
    assert "reads from stored snapshot (embedded default" in first
    assert "jira:issue_created: 202 queued" in first
    assert "(forged): 401 refused" in first and "200 repeat" in first
    assert "succeeded: 3 new, 0 updated, 0 deleted" in first
    assert "succeeded: 0 new, 1 updated, 1 deleted" in second
    assert "PAY-3 To Do        Spike: instalments  (deleted" in second
