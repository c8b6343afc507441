"""``manage.py demo_connections`` on the embedded defaults (SQLite under a fresh VAR_DIR, the
stored tracker): signed webhooks queue syncs that a real runworker runs; forged and replayed
ones queue nothing; a deletion reaches the mirror."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow


def test_demo_connections__webhooks_keep_the_connection_in_step_on_the_embedded_tracker(tmp_path: Path):
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["VAR_DIR"] = str(tmp_path / "var")  # stands for a fresh clone's var/
    env["DEBUG"] = "true"  # as make demo sets it: a development machine needs no SECRET_KEY
    for command in (["migrate", "-v0"], ["demo_connections"]):
        result = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    first, second = result.stdout.split("\n2. ")
    assert "reads from stored snapshot (embedded default" in first
    assert "jira:issue_created: 202 queued" in first
    assert "(forged): 401 refused" in first and "200 repeat" in first
    assert "succeeded: 3 new, 0 updated, 0 deleted" in first
    assert "succeeded: 0 new, 1 updated, 1 deleted" in second
    assert "PAY-3 To Do        Spike: instalments  (deleted" in second
