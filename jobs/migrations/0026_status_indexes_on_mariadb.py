"""On MariaDB, one index led by the status where there were four: ``jobs_running`` becomes
(status, id, locked_by) and stands in for ``jobs_rare_status`` (status, id); that index and
the failed lists' (``jobs_failed_list``, ``jobs_failed_queue``) are led by ``failed`` (1 while
the job has failed, NULL otherwise). A job that succeeds moves four index entries instead of
ten, and a heartbeat none (``jobs.drivers.mariadb.FAILED_SCHEMA``). MariaDB copies the table
to add a stored column (writes wait meanwhile), as 0022 did. PostgreSQL: nothing changes (its
indexes are partial: a job enters the failed lists' only when it fails)."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0025_notify_keyed_jobs")]

    operations = [on_mariadb(mariadb.FAILED_SCHEMA, mariadb.FAILED_SCHEMA_UNDO)]
