"""On MariaDB, ``running_key`` (which leads ``jobs_running_key``) without the type-wide keys,
as PostgreSQL's index is without them since 0021: a claim that counts a type's running jobs
reads the running rows instead (``jobs.drivers.mariadb.RUNNING_KEY_WITHOUT_TYPE_KEYS_SCHEMA``).
MariaDB copies the table to change a stored column (writes wait meanwhile), as 0022 did.
PostgreSQL: nothing changes."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0023_flow_gate_leases")]

    operations = [
        on_mariadb(
            mariadb.RUNNING_KEY_WITHOUT_TYPE_KEYS_SCHEMA, mariadb.RUNNING_KEY_WITHOUT_TYPE_KEYS_SCHEMA_UNDO
        )
    ]
