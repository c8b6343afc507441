"""What a type's or queue's gate surely still allows (``jobs.flow.spare``): a claim within
it takes its jobs in one statement, without counting what runs."""

from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot roll DDL back; each statement commits on its own

    dependencies = [("platform", "0019_claim_keyed_any")]

    operations = [
        migrations.AddField(
            model_name="flowgate",
            name="spare_basis",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.AddField(
            model_name="flowgate",
            name="spare_slots",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="flowgate",
            name="spare_starts",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="flowgate",
            name="spare_until",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="flowgate",
            name="spare_pending_at",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="flowgate",
            name="spare_pending",
            field=models.IntegerField(blank=True, null=True),
        ),
    ]
