"""On MariaDB, the failed lists' and the rare statuses' indexes led by ``rare_status`` (the
status while it is failed or cancelled, NULL otherwise) instead of the status, so that a job
that succeeds no longer moves their entries at its claim and its acknowledgement
(``jobs.drivers.mariadb.RARE_STATUS_SCHEMA``). MariaDB copies the table to add a stored
column (writes wait meanwhile), as 0022 did. PostgreSQL: nothing changes (its indexes are
partial: a job enters them only when it fails or is cancelled)."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0025_notify_keyed_jobs")]

    operations = [on_mariadb(mariadb.RARE_STATUS_SCHEMA, mariadb.RARE_STATUS_SCHEMA_UNDO)]
