"""Waiting on a condition with a deadline: the only way tests wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_for[T](
    condition: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, message: str = ""
) -> T:
    """Poll ``condition`` until it returns something truthy (returned), or fail after ``timeout``.

    The deadline only bounds a test that would otherwise hang: it is never what a test
    measures, so it is generous."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {message or condition}")
        time.sleep(interval)


def wait_file(path: Path, timeout: float = 30.0) -> None:
    """Until ``path`` exists (a test job writes its marker file when its body starts)."""
    wait_for(path.exists, timeout=timeout, interval=0.02, message=f"{path.name} to be written")
