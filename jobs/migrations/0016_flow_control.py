"""Flow control (``jobs.flow``): each job's limit keys and the index that counts the running
jobs of a key, the index of the queued jobs that carry a key (claimed through flow
control), a row per queue an operator paused or limited, and a gate per limit key. MariaDB
builds both indexes its own way (``jobs.drivers.mariadb.FLOW_SCHEMA``)."""

from django.db import migrations, models

from jobs.drivers import mariadb
from jobs.migrations._mariadb import on_mariadb


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [
        ("platform", "0015_workflow_traceparent"),
    ]

    operations = [
        migrations.CreateModel(
            name="FlowGate",
            fields=[
                ("key", models.CharField(max_length=255, primary_key=True, serialize=False)),
                ("recent", models.TextField(blank=True, default="")),
            ],
            options={
                "db_table": "jobs_flow_gate",
            },
        ),
        migrations.CreateModel(
            name="Queue",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("queue", models.CharField(max_length=50, unique=True)),
                ("paused", models.BooleanField(default=False, help_text="Paused: no job of the queue starts.")),
                ("limits_set", models.BooleanField(default=False)),
                ("concurrency", models.PositiveIntegerField(blank=True, help_text="Jobs running at once.", null=True)),
                ("rate", models.CharField(blank=True, default="", help_text="Starts per period: 60/m.", max_length=20)),
                ("changed_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "verbose_name": "queue",
                "db_table": "jobs_queue",
                "ordering": ["queue"],
            },
        ),
        migrations.AddField(
            model_name="job",
            name="concurrency_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="rate_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("concurrency_key__isnull", False), ("status", "running")),
                fields=["concurrency_key"],
                name="jobs_running_key",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("due_later", False), ("status", "queued"))
                & (models.Q(("concurrency_key__isnull", False)) | models.Q(("rate_key__isnull", False))),
                fields=["queue", "priority", "run_at", "id"],
                name="jobs_claim_keyed",
            ),
        ),
        on_mariadb(mariadb.FLOW_SCHEMA, mariadb.FLOW_SCHEMA_UNDO),
    ]
