"""On MariaDB, the failed lists' indexes (``jobs_failed_list``, ``jobs_failed_queue``) led by
``failed`` (1 while the job has failed, NULL otherwise) instead of the status, so that a job
that succeeds no longer moves their entries at its claim and its acknowledgement
(``jobs.drivers.mariadb.FAILED_SCHEMA``). MariaDB copies the table to add a stored column
(writes wait meanwhile), as 0022 did. PostgreSQL: nothing changes (its failed list's index is
partial: a job enters it only when it fails)."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0025_notify_keyed_jobs")]

    operations = [on_mariadb(mariadb.FAILED_SCHEMA, mariadb.FAILED_SCHEMA_UNDO)]
