"""The trace context a workflow was started in (``jobs.tracing``), which its steps' jobs
carry. Nullable without a default: adding it changes only the catalogue."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('platform', '0014_observability'),
    ]

    operations = [
        migrations.AddField(
            model_name='workflow',
            name='traceparent',
            field=models.CharField(blank=True, max_length=55, null=True),
        ),
    ]
