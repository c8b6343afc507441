"""Imported once by the forkserver, so every child starts with Django already set up.

The forkserver ignores SIGTERM (it already ignores SIGINT), and so do the children it
forks: the supervisor owns shutdown. A SIGTERM sent to every process of the worker at once
(systemd, a container runtime, a terminal) would otherwise end the forkserver, and a child's
end is reported through the forkserver: every child, still running its job, would read as
crashed.
"""

import signal

import django

signal.signal(signal.SIGTERM, signal.SIG_IGN)
django.setup()
