"""The admin page's needs: its verbose names, and the indexes its queries rely on.

Each index's comment (in jobs/models.py) says which query of jobs/admin.py it serves.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("platform", "0003_claim_any_index")]

    operations = [
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
