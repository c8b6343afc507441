"""The claim index of a lane serving several queues, and the admin page's needs: its
verbose names and the indexes its queries rely on.

Each index's comment (in jobs/models.py) says which query it serves. This migration
replaces two that were both numbered 0003 (``0003_claim_any_index``, then
``0003_admin_indexes``); a database that applied them is recorded as having applied this
one and runs nothing again.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    replaces = [
        ("platform", "0003_claim_any_index"),
        ("platform", "0003_admin_indexes"),
    ]

    dependencies = [("platform", "0002_notify_trigger")]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "queued")),
                fields=["priority", "run_at", "id"],
                name="jobs_claim_any",
            ),
        ),
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [("view_jobs", "Can view the background jobs page")],
                "verbose_name": "background job",
                "verbose_name_plural": "Background jobs",
            },
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "failed")),
                fields=["queue", "id"],
                name="jobs_failed_queue",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("dedupe_key__isnull", False)),
                fields=["dedupe_key"],
                name="jobs_dedupe_key",
            ),
        ),
    ]
