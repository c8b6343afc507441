"""Running a demo command as ``make demo`` does, on a fresh clone's embedded defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def run_demo(command: str, var_dir: Path, timeout: float = 300) -> str:
    """``manage.py migrate`` then ``manage.py <command>`` with nothing of this environment
    but the basics, SQLite under ``var_dir``; returns the command's output."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["VAR_DIR"] = str(var_dir)  # stands for a fresh clone's var/
    env["DEBUG"] = "true"  # as make demo sets it: a development machine needs no SECRET_KEY
    for args in (["migrate", "-v0"], [command]):
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
