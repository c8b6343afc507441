"""``manage.py demo_workspace`` on the embedded defaults (SQLite under a fresh VAR_DIR, the
stored code host): a real local git repository ingested twice, around a push."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow


def test_demo_workspace__ingests_a_local_git_repository_and_syncs_from_the_embedded_host(tmp_path: Path):
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["VAR_DIR"] = str(tmp_path / "var")  # stands for a fresh clone's var/
    env["DEBUG"] = "true"  # as make demo sets it: a development machine needs no SECRET_KEY
    for command in (["migrate", "-v0"], ["demo_workspace"]):
        result = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    commits = re.findall(r"commit ([0-9a-f]{12}) on main, django-project", out)
    assert len(commits) == 2 and commits[0] != commits[1]  # the second ingest fetched the push
    assert (
        "shop/payments.py" not in out.split("2. A push")[0]
        and "shop/payments.py" in out.split("2. A push")[1]
    )
    assert "Code host: stored snapshot (embedded default" in out
    assert "#2 open    We decided to switch to Stripe for payments (bob), CI success, approved by ada" in out
    assert "failed" not in out
    assert (tmp_path / "var" / "repositories").is_dir()
