"""On MariaDB, the claim indexes and ``jobs_running_key`` led by generated columns that hold
a value only in the state each index serves, so an acknowledgement leaves them alone
(``jobs.drivers.mariadb.STILL_INDEXES_SCHEMA``). PostgreSQL's partial indexes already keep
only those rows: nothing changes there. MariaDB copies the table to add stored columns
(writes wait meanwhile): 27 s for a million rows on the machine of docs/benchmarks.md."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0021_running_key_without_type_keys")]

    operations = [on_mariadb(mariadb.STILL_INDEXES_SCHEMA, mariadb.STILL_INDEXES_SCHEMA_UNDO)]
