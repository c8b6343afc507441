"""MariaDB and MySQL have no partial indexes: Django skips the model's conditional indexes
and the conditional unique constraint there, and this migration builds their equivalents
(``jobs.drivers.mariadb``, under "schema"). PostgreSQL and SQLite keep the partial ones."""

from django.db import migrations

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own
    dependencies = [("platform", "0009_dedupe_key_newest_first")]
    operations = [on_mariadb(mariadb.SCHEMA, mariadb.SCHEMA_UNDO)]
