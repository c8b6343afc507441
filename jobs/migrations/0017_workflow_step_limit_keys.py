"""A workflow step's flow-control keys, rendered when the workflow starts as enqueue renders
a job's, and copied onto its job when it is released: the claim holds a step's job to its
type's limits as any job. Nullable without a default: adding them changes only the
catalogue."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('platform', '0016_flow_control'),
    ]

    operations = [
        migrations.AddField(
            model_name='workflowstep',
            name='concurrency_key',
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name='workflowstep',
            name='rate_key',
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
    ]
