"""Draining the queues from a script: ``runworker --burst`` in a process of its own, as the
demos run it (a worker's child processes need a process of their own)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError


def run_burst_worker(*args: str, log_path: Path, timeout: float = 300) -> float:
    """Run ``runworker --burst`` with ``args`` until nothing it serves is due, its output
    in ``log_path``; returns the seconds it took. CommandError when it fails.

    The worker is ``python -m django`` on this process's settings module, so it needs no
    ``manage.py`` and runs wherever the caller runs."""
    module = settings.SETTINGS_MODULE
    if not module:
        raise ImproperlyConfigured(
            "run_burst_worker needs a settings module (DJANGO_SETTINGS_MODULE): "
            "settings made with settings.configure() cannot be handed to another process."
        )
    # The worker imports the settings module as this process did: its folder goes first on
    # the worker's path (where manage.py would have put it), then whatever PYTHONPATH held.
    import_path = os.pathsep.join(filter(None, (_import_root(module), os.environ.get("PYTHONPATH"))))
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": module, "PYTHONPATH": import_path}
    started = time.monotonic()
    with log_path.open("w") as log:
        result = subprocess.run(
            [sys.executable, "-m", "django", "runworker", "--burst", *args],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    if result.returncode != 0:
        raise CommandError(f"The worker exited with {result.returncode}; see {log_path}.")
    return time.monotonic() - started


def _import_root(module: str) -> str:
    """The folder from which ``module``'s top-level package (or module) was imported."""
    spec = importlib.util.find_spec(module.partition(".")[0])
    if spec is None:  # the settings were loaded, so the module exists; guard for the type checker
        raise ImproperlyConfigured(f"The settings module {module} cannot be found.")
    if spec.submodule_search_locations:  # a package: its folder's parent
        return str(Path(next(iter(spec.submodule_search_locations))).parent)
    return str(Path(str(spec.origin)).parent)
