"""The enqueue trigger says when a queue's new due jobs carry no limit key
(``plain:<queue>``), so a worker woken by it skips the claim of keyed jobs; PostgreSQL only
(see jobs/drivers/postgres.py). Undone, the trigger sends the queue's name alone again."""

from django.db import migrations

from jobs.drivers import postgres

# The trigger as 0002 made it, for going back.
PREVIOUS_TRIGGER = f"""
CREATE OR REPLACE FUNCTION jobs_notify_enqueued() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('{postgres.CHANNEL}', queue)
       FROM (SELECT DISTINCT queue FROM new_jobs
              WHERE status = 'queued' AND run_at <= now()) AS due;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""


def plain_notices(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(postgres.CREATE_NOTIFY_TRIGGER)


def queue_notices(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PREVIOUS_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [("platform", "0017_workflow_step_limit_keys")]
    operations = [migrations.RunPython(plain_notices, queue_notices)]
