"""What lets ``make test`` run the suite on both cores: each pytest-xdist worker has its own
var/ (blobs, checkouts, Qdrant's local folder), inherited by the workers it starts, and a
``serial`` test never runs beside another pytest worker."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

SETTINGS_TEST = str(ROOT / "config" / "settings_test.py")
SERIAL = "tests/acceptance/test_database_restart.py"  # a test marked serial


def _var_dir_under(monkeypatch: pytest.MonkeyPatch, **variables: str) -> str:
    """The VAR_DIR that config/settings_test.py leaves in the environment under ``variables``."""
    for name in ("VAR_DIR", "TEST_VAR_DIR_OF", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    runpy.run_path(SETTINGS_TEST)
    return os.environ["VAR_DIR"]


def test_var_dir__a_pytest_worker_makes_its_own_instead_of_its_parents(monkeypatch):
    parents = _var_dir_under(monkeypatch)
    assert os.path.isdir(parents) and os.environ["TEST_VAR_DIR_OF"] == "main"

    ours = _var_dir_under(monkeypatch, VAR_DIR=parents, TEST_VAR_DIR_OF="main", PYTEST_XDIST_WORKER="gw1")
    assert ours != parents and os.path.isdir(ours)
    assert os.environ["TEST_VAR_DIR_OF"] == "gw1"

    # The runworker processes gw1 starts inherit its environment, and keep its folder.
    assert _var_dir_under(monkeypatch, VAR_DIR=ours, TEST_VAR_DIR_OF="gw1", PYTEST_XDIST_WORKER="gw1") == ours


def test_var_dir__one_set_beforehand_is_kept(monkeypatch, tmp_path):
    assert _var_dir_under(monkeypatch, VAR_DIR=str(tmp_path)) == str(tmp_path)
    assert _var_dir_under(monkeypatch, VAR_DIR=str(tmp_path), PYTEST_XDIST_WORKER="gw0") == str(tmp_path)


@pytest.mark.slow  # starts pytest with two workers
def test_serial__is_skipped_beside_another_pytest_worker():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-m", "serial", "-rs", "-p", "no:cacheprovider", SERIAL],
        cwd=ROOT,
        env={
            key: value
            for key, value in os.environ.items()
            if key != "VAR_DIR" and not key.startswith(("PYTEST_XDIST_", "TEST_"))  # a run of its own
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "serial: runs alone, without -n" in done.stdout
    assert " passed" not in done.stdout
