"""The audit-log model ``PipelineError`` becomes ``ErrorLogEntry``, so the name no longer
collides with the exception ``pipeline.errors.PipelineError``.

``RenameModel`` renames the table and keeps its rows. ``manage.py migrate`` then renames the
content type and the model permissions (``pipeline.view_pipelineerror`` becomes
``pipeline.view_errorlogentry``), so groups and users keep what they were granted.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0002_search_gin")]

    operations = [
        migrations.RenameModel(old_name="PipelineError", new_name="ErrorLogEntry"),
        migrations.AlterModelOptions(
            name="errorlogentry",
            options={
                "ordering": ["-id"],
                "verbose_name": "error log entry",
                "verbose_name_plural": "error log entries",
            },
        ),
    ]
