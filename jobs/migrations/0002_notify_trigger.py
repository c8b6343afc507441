"""Enqueue sends NOTIFY by trigger on PostgreSQL (see jobs/sql.py); other databases poll."""

from django.db import migrations

from jobs import sql


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(sql.CREATE_NOTIFY_TRIGGER)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(sql.DROP_NOTIFY_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [("platform", "0001_initial")]
    operations = [migrations.RunPython(create_trigger, drop_trigger)]
