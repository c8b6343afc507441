"""On MariaDB, ``claim_ready`` (which leads the claim indexes ``jobs_claim`` and
``jobs_claim_any``) without the jobs that carry a limit key, which the keyed indexes hold:
each queued job is in one pair of claim indexes, so a keyed job's claim moves two entries
instead of four, and the plain claim no longer reads past keyed jobs
(``jobs.drivers.mariadb.CLAIM_READY_UNKEYED_SCHEMA``). MariaDB copies the table to change a
stored column (writes wait meanwhile), as 0022 did. PostgreSQL: nothing changes."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0026_status_indexes_on_mariadb")]

    operations = [on_mariadb(mariadb.CLAIM_READY_UNKEYED_SCHEMA, mariadb.CLAIM_READY_UNKEYED_SCHEMA_UNDO)]
