"""In CI (``CI=true``) a missing Chromium fails the run instead of skipping the browser tests,
the only check of the page's live refresh: both ``make chromium`` and the tests' own rule
(tests/support/chromium.py). On a developer's machine they are still skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # starts make and pytest

BROWSER_TEST = "tests/browser/test_admin_browser.py::test_operator__retries_a_failed_job_and_sees_it_queued"


def _environment(ci: bool, **variables: str) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key != "CI"}
    if ci:
        environment["CI"] = "true"
    environment.update(variables)
    return environment


def _make_chromium(tmp_path: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    """``make chromium`` where Chromium is not on the PATH and apt-get cannot install it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text("#!/bin/bash\nexit 100\n")
    (bin_dir / "apt-get").chmod(0o755)
    environment = {"PATH": str(bin_dir), **({"CI": "true"} if ci else {})}
    return subprocess.run(
        ["/usr/bin/make", "--no-print-directory", "chromium"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_make_chromium__a_failed_install_stops_a_ci_run(tmp_path):
    result = _make_chromium(tmp_path, ci=True)
    assert result.returncode != 0
    assert "CI=true needs it for the browser tests" in result.stderr


def test_make_chromium__a_failed_install_only_warns_elsewhere(tmp_path):
    result = _make_chromium(tmp_path, ci=False)
    assert result.returncode == 0, result.stderr
    assert "browser tests will be skipped" in result.stderr


def _browser_test(*, ci: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", BROWSER_TEST, "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=_environment(ci, CHROMIUM_PATH="/nonexistent/chromium"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_browser_tests__fail_in_ci_without_chromium():
    result = _browser_test(ci=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout  # failed in its set-up, before any fixture ran
    assert "CI=true and Chromium is missing at /nonexistent/chromium" in result.stdout


def test_browser_tests__are_skipped_elsewhere_without_chromium():
    result = _browser_test(ci=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
