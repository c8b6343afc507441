"""Running the same work from several sessions at the same moment, as two timer runs or two
workers would."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connections


def run_at_once[T](*calls: Callable[[], T], timeout: float = 60.0) -> list[T]:
    """Run every call in its own thread (so its own database connection), all released
    together by a barrier; return their results in the order of ``calls``.

    A call that raises fails the test with its exception; one still running after
    ``timeout`` seconds fails it too (a deadlock, say), instead of hanging the run.
    """
    start = threading.Barrier(len(calls))
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def run(index: int, call: Callable[[], T]) -> None:
        try:
            start.wait(timeout=timeout)
            results[index] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread below
            errors.append(exc)
        finally:
            connections.close_all()  # this thread's connections only

    threads = [
        threading.Thread(target=run, args=(index, call), daemon=True) for index, call in enumerate(calls)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    if errors:
        raise errors[0]
    stuck = sum(thread.is_alive() for thread in threads)
    assert not stuck, f"{stuck} of {len(calls)} concurrent calls still running after {timeout}s"
    return [results[index] for index in range(len(calls))]


def in_thread(target: Callable[[], None]) -> threading.Thread:
    """Start ``target`` in a thread of its own (so its own database connection), closed
    when it ends; join the returned thread to wait for it."""

    def run() -> None:
        try:
            target()
        finally:
            connections.close_all()  # this thread's connections only

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
