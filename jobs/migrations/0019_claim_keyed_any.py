"""The queued jobs that carry a limit key, in claim order across queues
(``jobs_claim_keyed_any``): the flow-controlled claim of a lane that serves several queues
reads them from the front instead of sorting every due keyed job of those queues. MariaDB
builds it its own way (``jobs.drivers.mariadb.CLAIM_KEYED_ANY_SCHEMA``)."""

from django.db import migrations, models

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0018_notify_plain_jobs")]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("due_later", False), ("status", "queued"))
                & (models.Q(("concurrency_key__isnull", False)) | models.Q(("rate_key__isnull", False))),
                fields=["priority", "run_at", "id"],
                name="jobs_claim_keyed_any",
            ),
        ),
        on_mariadb(mariadb.CLAIM_KEYED_ANY_SCHEMA, mariadb.CLAIM_KEYED_ANY_SCHEMA_UNDO),
    ]
