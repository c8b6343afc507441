"""Bounded waits: a benchmark that hangs says what it was waiting for."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"Timed out after {timeout:.0f} s waiting for {what}.")
        time.sleep(interval)
