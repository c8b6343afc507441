"""Workflows: a workflow, its steps and the edges between them (``jobs.workflow``), and the
job's step. The column on jobs_job is nullable without a default or a foreign key, so
adding it changes only the catalogue. MariaDB has no partial indexes: the last operation
builds its equivalents (``jobs.drivers.mariadb``, under "workflow schema")."""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):

    dependencies = [
        ('platform', '0012_due_later'),
    ]

    operations = [
        migrations.CreateModel(
            name='Workflow',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('status', models.CharField(choices=[('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='running', max_length=10)),
                ('dedupe_key', models.CharField(blank=True, max_length=255, null=True)),
                ('steps', models.PositiveIntegerField(default=0, help_text='Steps in the workflow.')),
                ('unfinished', models.PositiveIntegerField(default=0)),
                ('message', models.CharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'db_table': 'jobs_workflow',
                'ordering': ['-id'],
                'indexes': [models.Index(fields=['status', 'id'], name='jobs_workflow_status'), models.Index(fields=['dedupe_key', 'id'], name='jobs_workflow_key')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('dedupe_key__isnull', False), ('status', 'running')), fields=('name', 'dedupe_key'), name='jobs_workflow_running_key')],
            },
        ),
        migrations.CreateModel(
            name='WorkflowStep',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField()),
                ('name', models.CharField(max_length=200)),
                ('type', models.CharField(max_length=100)),
                ('queue', models.CharField(max_length=50)),
                ('priority', models.SmallIntegerField(default=0)),
                ('payload', models.JSONField(blank=True, default=dict)),
                ('dedupe_key', models.CharField(blank=True, max_length=255, null=True)),
                ('max_attempts', models.PositiveSmallIntegerField(default=3)),
                ('delay', models.FloatField(blank=True, help_text='Seconds from its release to its run.', null=True)),
                ('results_as', models.CharField(blank=True, default='', max_length=50)),
                ('status', models.CharField(choices=[('waiting', 'Waiting'), ('released', 'Released'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='waiting', max_length=10)),
                ('pending', models.PositiveIntegerField(default=0)),
                ('depth', models.PositiveIntegerField(default=0)),
                ('result', models.JSONField(blank=True, null=True)),
                ('message', models.CharField(blank=True, default='', max_length=200)),
                ('added_by', models.BigIntegerField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('workflow', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.DB_CASCADE, related_name='+', to='platform.workflow')),
            ],
            options={
                'db_table': 'jobs_workflow_step',
                'ordering': ['workflow', 'position'],
            },
        ),
        migrations.CreateModel(
            name='WorkflowEdge',
            fields=[
                ('pk', models.CompositePrimaryKey('upstream', 'downstream', blank=True, editable=False, primary_key=True, serialize=False)),
                ('downstream', models.ForeignKey(on_delete=django.db.models.deletion.DB_CASCADE, related_name='+', to='platform.workflowstep')),
                ('upstream', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.DB_CASCADE, related_name='+', to='platform.workflowstep')),
            ],
            options={
                'db_table': 'jobs_workflow_edge',
            },
        ),
        migrations.AddField(
            model_name='job',
            name='step',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='platform.workflowstep'),
        ),
        migrations.AddConstraint(
            model_name='job',
            constraint=models.UniqueConstraint(condition=models.Q(('step__isnull', False)), fields=('step',), name='jobs_step_job'),
        ),
        migrations.AddIndex(
            model_name='workflowstep',
            index=models.Index(fields=['workflow', 'depth', 'position'], name='jobs_workflow_step_graph'),
        ),
        migrations.AddIndex(
            model_name='workflowstep',
            index=models.Index(fields=['status'], name='jobs_workflow_step_status'),
        ),
        migrations.AddConstraint(
            model_name='workflowstep',
            constraint=models.UniqueConstraint(fields=('workflow', 'name'), name='jobs_workflow_step_name'),
        ),
        # MariaDB cannot roll DDL back: its statements run outside a transaction.
        on_mariadb(mariadb.WORKFLOW_SCHEMA, mariadb.WORKFLOW_SCHEMA_UNDO, atomic=False),
    ]
