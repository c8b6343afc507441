"""Jobs due later leave the claims' range: a flag (``Job.due_later``) set on a queued job
whose run_at is still ahead, which the claim indexes now carry after the queue (PostgreSQL,
SQLite) or the status (MariaDB), and an index of the jobs due later by run_at, from which
the workers promote them when due. A claim then never reads past jobs waiting for a later
time (docs/internals.md, "Jobs due later").

Queued jobs already waiting for a later time are flagged here, before the indexes are
built. On MariaDB the claim indexes are rebuilt to lead with the status and the index of
the jobs due later is one on a generated column (``jobs.drivers.mariadb``, "schema
(migration 0012)").
"""

from django.db import migrations, models
from django.db.models.functions import Now

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


def flag_waiting_jobs(apps, schema_editor):
    Job = apps.get_model("platform", "Job")
    Job.objects.using(schema_editor.connection.alias).filter(status="queued", run_at__gt=Now()).update(
        due_later=True
    )


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own
    dependencies = [("platform", "0011_timers")]

    operations = [
        # Reversed last: 0010's MariaDB shapes of the claim indexes come back.
        on_mariadb((), mariadb.SCHEMA_CLAIM_0010),
        migrations.RemoveIndex(model_name="job", name="jobs_claim"),
        migrations.RemoveIndex(model_name="job", name="jobs_claim_any"),
        migrations.AddField(
            model_name="job",
            name="due_later",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunPython(flag_waiting_jobs, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "queued")),
                fields=["queue", "due_later", "priority", "run_at", "id"],
                name="jobs_claim",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "queued")),
                fields=["due_later", "priority", "run_at", "id"],
                name="jobs_claim_any",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("due_later", True), ("status", "queued")),
                fields=["run_at"],
                name="jobs_due_later",
            ),
        ),
        on_mariadb(mariadb.SCHEMA_DUE_LATER, mariadb.SCHEMA_DUE_LATER_UNDO),
    ]
