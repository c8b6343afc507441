"""The children's forkserver, started as a fork of the supervisor rather than as a new
interpreter.

``multiprocessing`` starts its forkserver by running a new Python that imports the preload
(``jobs.worker.preload``: all of Django and the project) again: as long as the supervisor's
own start-up, and on two cores, beside the other workers starting, the larger part of a
worker's time to its first job. The supervisor has done that work already, so ``start``
forks it at the very beginning of ``Supervisor.run``, before the supervisor opens a
database connection, installs a signal handler or marks its sessions for asynchronous
commit, and the fork serves ``multiprocessing``'s forkserver loop as the spawned one would:
the children it forks have Django set up and no socket of the supervisor's, and a child
starts in milliseconds.

It fills in the forkserver's private fields (``multiprocessing.forkserver._forkserver``) as
its own ``ensure_running`` does, on the Python versions whose layout it knows (3.12,
3.13); elsewhere, or if anything is not as expected, ``multiprocessing`` starts its forkserver
as usual on the first child, with the same preload; so it does when a thread is running
already (one the settings started could hold a lock at the fork, locked for good in every
child). Should the forkserver die, that is also how it comes back.

The resource tracker (``multiprocessing.resource_tracker``, which the children share) is
forked the same way just before, rather than started as a new interpreter; should it die,
``multiprocessing`` starts a new one its own way. Before its fork the forkserver imports the
modules every child runs (so no child imports anything as it starts) and freezes what it
inherited (``gc.freeze``), so the children's collections skip it.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import sys
import threading
from multiprocessing import connection, forkserver, resource_tracker, util
from typing import Any

from django.db import connections

logger = logging.getLogger("jobs.worker")

#: The versions whose ``ForkServer`` fields and ``main`` signature this module fills in.
KNOWN_VERSIONS = ((3, 12), (3, 13))


def start() -> bool:
    """Fork this process into the children's forkserver, unless one runs already; True
    when it did. Call it before any database connection or thread exists."""
    server: Any = forkserver._forkserver  # private fields, typed nowhere
    if sys.version_info[:2] not in KNOWN_VERSIONS or not hasattr(server, "_forkserver_alive_fd"):
        return False
    if threading.active_count() > 1:
        # A thread the settings started (an error reporter's, say) may hold a lock at the
        # fork, which would stay locked in every child: the spawned forkserver has none.
        logger.debug("Threads are running: the children's forkserver starts as a new interpreter.")
        return False
    with server._lock:
        if server._forkserver_pid is not None:
            return False
        # No socket of the supervisor's may reach a child: none is open yet, and closing
        # any that is costs a reconnect.
        connections.close_all()
        _start_resource_tracker()  # before the fork: children share the tracker
        _import_what_children_run()
        with socket.socket(socket.AF_UNIX) as listener:
            address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]
            listener.bind(address)
            if not util.is_abstract_socket_namespace(address):
                os.chmod(address, 0o600)
            listener.listen()
            # Every client holds the write end: when the supervisor is gone, the read end
            # reads EOF and the forkserver exits.
            alive_r, alive_w = os.pipe()
            for stream in (sys.stdout, sys.stderr):
                stream.flush()  # or the fork would write what is buffered twice
            pid = os.fork()
            if pid == 0:
                _serve(listener.fileno(), alive_r, alive_w)  # never returns
            os.close(alive_r)
        server._forkserver_address = address
        server._forkserver_alive_fd = alive_w
        server._forkserver_pid = pid
    return True


def _start_resource_tracker() -> None:
    """``multiprocessing``'s resource tracker (which removes what the children's semaphores
    leave behind), forked from this process as the forkserver is, unless one runs already:
    ``ensure_running`` starts a new interpreter, some 50 ms of CPU that on two cores the
    worker's own start-up and the other workers' wait for."""
    tracker: Any = resource_tracker._resource_tracker  # private fields, typed nowhere
    if not all(hasattr(tracker, field) for field in ("_lock", "_fd", "_pid")):
        resource_tracker.ensure_running()
        return
    with tracker._lock:
        if tracker._fd is not None:
            return
        read_end, write_end = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(write_end)
                resource_tracker.main(read_end)  # until every write end is closed
                code = 0
            finally:
                os._exit(code)  # never the supervisor's finally blocks or atexit hooks
        os.close(read_end)
        tracker._fd = write_end
        tracker._pid = pid


def _import_what_children_run() -> None:
    """The modules every child imports as it starts (its main function, and what unpickling
    its arguments needs), imported once before the fork rather than in each child."""
    import multiprocessing.popen_forkserver  # noqa: F401
    import multiprocessing.sharedctypes  # noqa: F401

    from jobs.worker import child  # noqa: F401


def _serve(listener_fd: int, alive_r: int, alive_w: int) -> None:
    """The forked process: ``multiprocessing``'s forkserver loop, then exit without running
    anything of the supervisor's (its ``finally`` blocks, its atexit hooks)."""
    code = 1
    try:
        os.close(alive_w)
        # As jobs.worker.preload does for a spawned forkserver: the supervisor owns shutdown.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # What the supervisor built lives on in every child: their collections skip it, and
        # so do not write to the pages a child shares with this process.
        gc.freeze()
        forkserver.main(listener_fd, alive_r, [])
        code = 0
    except SystemExit as exit_:
        code = 0 if exit_.code in (None, 0) else 1  # main ends with SystemExit at EOF
    except BaseException:
        logger.exception("The children's forkserver failed.")
    finally:
        os._exit(code)
