"""Enqueue sends NOTIFY by trigger on PostgreSQL (see jobs/drivers/postgres.py); other databases poll."""

from django.db import migrations

from jobs.drivers import postgres


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(postgres.CREATE_NOTIFY_TRIGGER)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(postgres.DROP_NOTIFY_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [("platform", "0001_initial")]
    operations = [migrations.RunPython(create_trigger, drop_trigger)]
