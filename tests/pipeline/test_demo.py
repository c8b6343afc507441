"""``manage.py migrate`` then ``manage.py demo`` on the embedded defaults (SQLite under a
fresh VAR_DIR, local blobs, local classifier): the README's first command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow


def test_demo__runs_on_the_embedded_defaults_with_no_environment(tmp_path: Path):
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["VAR_DIR"] = str(tmp_path / "var")  # stands for a fresh clone's var/
    env["DEBUG"] = "true"  # as make demo sets it: a development machine needs no SECRET_KEY
    for command in (["migrate", "-v0"], ["demo"]):
        result = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "7 imported, 0 already present, 1 unreadable" in out
    assert out.count("duplicate of #") == 1
    assert "Rechnung für März" in out
    assert "Jobs: 7 succeeded." in out
    assert (tmp_path / "var" / "platform.sqlite3").is_file()
    assert list((tmp_path / "var" / "blobs").rglob("*.eml"))
