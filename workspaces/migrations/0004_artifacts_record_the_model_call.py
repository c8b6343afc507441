"""AI artifacts record the model call (provider, token counts, latency); decisions keep the
evidence they rest on and the call that proposed them.

Rows written before: every artifact came from the local generator (model "local-digest-1"),
so they are marked as written by no model; every decision rests on the one statement it
quotes, whose hash is already its fingerprint.
"""

import django.db.models.deletion
from django.db import migrations, models


def backfill(apps, schema_editor):
    AIArtifact = apps.get_model("workspaces", "AIArtifact")
    Decision = apps.get_model("workspaces", "Decision")
    AIArtifact.objects.filter(provider="", model__startswith="local-").update(provider="local")
    for decision in Decision.objects.filter(evidence=[]).iterator(chunk_size=1000):
        decision.evidence = [
            {"source": decision.source, "quote": decision.title, "fingerprint": decision.fingerprint}
        ]
        decision.save(update_fields=["evidence"])


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0002_job_keys_name_their_subject"),
    ]

    operations = [
        migrations.AddField(
            model_name="aiartifact",
            name="provider",
            field=models.CharField(blank=True, default="", max_length=20),
        ),
        migrations.AddField(
            model_name="aiartifact",
            name="input_tokens",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="aiartifact",
            name="output_tokens",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="aiartifact",
            name="latency_ms",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="decision",
            name="evidence",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="decision",
            name="artifact",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="decisions",
                to="workspaces.aiartifact",
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
