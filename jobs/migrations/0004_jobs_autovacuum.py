"""Autovacuum settings for the churning jobs table (PostgreSQL only; see the README).

Every job is inserted, updated two or three times and later deleted, so dead rows pile up
much faster than in an ordinary table: vacuum after 5 % of the rows changed rather than
20 %. Each vacuum also reads every index of the table, so not more often than that, and
throttled as usual, so that it never takes the workers' share of a small machine
(bench/throughput.py --scale measures the drain while it runs).
"""

from django.db import migrations

TUNE = """
ALTER TABLE jobs_job SET (autovacuum_vacuum_scale_factor = 0.05,
                          autovacuum_analyze_scale_factor = 0.05)
"""
RESET = """
ALTER TABLE jobs_job RESET (autovacuum_vacuum_scale_factor,
                            autovacuum_analyze_scale_factor)
"""


def tune(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TUNE)


def reset(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(RESET)


class Migration(migrations.Migration):
    dependencies = [("platform", "0003_claim_any_and_admin_indexes")]
    operations = [migrations.RunPython(tune, reset)]
