"""What a process of the project has loaded, reported by a real subprocess as JSON.

``worker`` runs ``manage.py runworker --burst`` (through manage.py, as a deployment starts
it) and reports at its exit, from the supervisor, the modules it imported and the job
types it registered; ``eager`` sets Django up, discovers the admin and imports every module
of the platform's packages, and reports the same: the job types the platform declares,
wherever it declares them. Both write to the path given as their last argument.

Nothing here imports Django or the project at the top: the report must show what the
process itself imported.

    python -c "from tests.support.start_up import main; main()" worker|eager PATH [ARGS...]
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import json
import pkgutil
import runpy
import sys
from pathlib import Path
from typing import Any

#: The platform's packages (``config`` holds the settings modules, imported by name only).
PLATFORM_PACKAGES = ("jobs", "pipeline", "workspaces", "language_models")


def main() -> None:
    mode, path, *args = sys.argv[1:]
    if mode == "worker":
        atexit.register(_write_report, Path(path))
        sys.argv = ["manage.py", "runworker", "--burst", *args]
        runpy.run_path("manage.py", run_name="__main__")
    elif mode == "eager":
        _import_everything()
        _write_report(Path(path))
    else:
        raise SystemExit(f"Unknown mode {mode!r}: worker or eager.")


def _import_everything() -> None:
    import django

    django.setup()
    from django.contrib import admin

    admin.autodiscover()
    for name in PLATFORM_PACKAGES:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, f"{name}."):
            importlib.import_module(module.name)


def _write_report(path: Path) -> None:
    from jobs import registry

    types = {job_type.name: _describe(job_type) for job_type in registry.all_types()}
    path.write_text(json.dumps({"modules": sorted(sys.modules), "types": types}))


def _describe(value: Any) -> Any:
    """A job type's declaration as plain data, the same in any process."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _describe(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if hasattr(value, "template") and hasattr(value, "kind"):  # a KeyTemplate
        return f"{value.kind}: {value.template}"
    if callable(value):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, tuple | list):
        return [_describe(item) for item in value]
    return repr(value)
