"""The flow gates keep the leases their types hand out (``jobs.flow.leases``): a small
table, a column added in place on both databases."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("platform", "0022_still_indexes_on_mariadb")]

    operations = [
        migrations.AddField(
            model_name="flowgate",
            name="leases",
            field=models.TextField(blank=True, default=""),
        ),
    ]
