"""Debian's Chromium for the browser tests: where it is, how it is started, when its absence
skips a test and when it fails one, and what the page's Content-Security-Policy blocked.

On a developer's machine without Chromium the browser tests are skipped. In CI
(``CI=true``, as GitHub Actions and ``.ci/run`` set it) they are the only check of the live
refresh and of the policy in a real browser, so a missing Chromium fails them instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: ``CHROMIUM_PATH`` points elsewhere (and lets a test pretend it is missing).
CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require() -> None:
    """Skip the browser test being set up when Chromium is missing; fail it in CI."""
    if CHROMIUM.exists():
        return
    if in_ci():
        pytest.fail(f"CI=true and Chromium is missing at {CHROMIUM}: the browser tests must run in CI.")
    pytest.skip(f"Debian's chromium is not installed at {CHROMIUM}")


# Chromium reports a blocked script or style on the console by itself; the page's
# securitypolicyviolation events are reported there too, so nothing blocked goes unseen.
_REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`);
});
"""


def record_csp_violations(page: Any) -> list[str]:
    """From now on, every Content-Security-Policy violation of ``page``'s documents."""
    violations: list[str] = []
    page.add_init_script(_REPORT_VIOLATIONS)
    page.on(
        "console",
        lambda message: "Content Security Policy" in message.text and violations.append(message.text),
    )
    return violations
