"""The full-text index's GIN index (serves ``search.search``), on PostgreSQL only: the
embedded SQLite demo has no GIN and searches the stored text instead."""

from django.db import migrations

CREATE = "CREATE INDEX IF NOT EXISTS pipeline_index_vector_gin ON pipeline_indexrecord USING gin (vector)"
DROP = "DROP INDEX IF EXISTS pipeline_index_vector_gin"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
