"""What the engine's migrations share (the migration loader skips this module: its name
starts with an underscore)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import migrations


def on_mariadb(forward: Sequence[str], backward: Sequence[str] = (), **options: Any) -> migrations.RunPython:
    """An operation that runs ``forward`` (``backward`` when the migration is reversed), one
    statement at a time, on MariaDB only: its own schema for what Django builds from the
    model elsewhere (``jobs.drivers.mariadb``)."""
    return on_vendor("mysql", forward, backward, **options)


def on_vendor(
    vendor: str, forward: Sequence[str], backward: Sequence[str] = (), **options: Any
) -> migrations.RunPython:
    """An operation that runs ``forward`` (``backward`` when the migration is reversed), one
    statement at a time, on the databases of ``vendor`` (Django's ``connection.vendor``) only."""

    def running(statements: Sequence[str]) -> Any:
        def run(apps: Any, schema_editor: Any) -> None:
            if schema_editor.connection.vendor == vendor:
                for statement in statements:
                    schema_editor.execute(statement)

        return run

    return migrations.RunPython(running(forward), running(backward), **options)
