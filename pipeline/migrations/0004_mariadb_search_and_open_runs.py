"""MariaDB and MySQL: the full-text index on the indexed text (``search.search`` matches
against it), and one open run per email, which PostgreSQL and SQLite enforce with a partial
unique index (``pipeline_one_open_run``, which Django skips here): a generated column
holding the email while its run is open, NULL once closed, under a unique index."""

from django.db import migrations

SCHEMA = (
    "CREATE FULLTEXT INDEX pipeline_index_text_ft ON pipeline_indexrecord (text)",
    """ALTER TABLE pipeline_pipelinerun ADD COLUMN open_email_id bigint
        GENERATED ALWAYS AS (IF(closed_at IS NULL, email_id, NULL)) STORED""",
    "CREATE UNIQUE INDEX pipeline_one_open_run ON pipeline_pipelinerun (open_email_id)",
)
UNDO = (
    "DROP INDEX pipeline_one_open_run ON pipeline_pipelinerun",
    "ALTER TABLE pipeline_pipelinerun DROP COLUMN open_email_id",
    "DROP INDEX pipeline_index_text_ft ON pipeline_indexrecord",
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        for statement in SCHEMA:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        for statement in UNDO:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own
    dependencies = [("pipeline", "0003_rename_pipelineerror_errorlogentry")]
    operations = [migrations.RunPython(create, drop)]
