"""MariaDB and MySQL have no partial indexes: Django skips the model's conditional indexes
and the conditional unique constraint there, and this migration builds their equivalents
(``jobs.drivers.mariadb``, under "schema"). PostgreSQL and SQLite keep the partial ones."""

from django.db import migrations

from jobs.drivers import mariadb


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        for statement in mariadb.SCHEMA:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        for statement in mariadb.SCHEMA_UNDO:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own
    dependencies = [("platform", "0009_dedupe_key_newest_first")]
    operations = [migrations.RunPython(create, drop)]
