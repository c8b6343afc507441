"""``jobs_running_key`` without the type-wide keys: every running job of a limited type held
the same value there, and those entries cost every claim of such jobs (PostgreSQL's btree
keeps equal keys in posting lists it rewrites as they come and go); a type's running jobs
are counted through ``jobs_running`` instead. MariaDB has no partial indexes and keeps its
own ``jobs_running_key`` (``jobs.drivers.mariadb.FLOW_SCHEMA``): its schema is not touched."""

from typing import Any

from django.db import migrations, models

OLD = models.Index(
    fields=["concurrency_key"],
    condition=models.Q(status="running", concurrency_key__isnull=False),
    name="jobs_running_key",
)
NEW = models.Index(
    fields=["concurrency_key"],
    condition=models.Q(status="running", concurrency_key__isnull=False)
    & ~models.Q(concurrency_key__startswith="type:"),
    name="jobs_running_key",
)


def _swap(drop: models.Index, add: models.Index) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "mysql":
            return
        job = apps.get_model("platform", "Job")
        schema_editor.remove_index(job, drop)
        schema_editor.add_index(job, add)

    return run


class Migration(migrations.Migration):
    dependencies = [("platform", "0020_flow_gate_spare")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_swap(OLD, NEW), _swap(NEW, OLD))],
            state_operations=[
                migrations.RemoveIndex(model_name="job", name="jobs_running_key"),
                migrations.AddIndex(model_name="job", index=NEW),
            ],
        )
    ]
