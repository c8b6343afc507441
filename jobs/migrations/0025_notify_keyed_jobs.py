"""The enqueue trigger also says when every one of a queue's new due jobs carries a limit
key (``keyed:<queue>``), so a worker woken by it skips the plain claim, which in a queue
that also holds plain jobs would read past every keyed job waiting there to find none;
PostgreSQL only (see jobs/drivers/postgres.py). Undone, the trigger sends ``plain:<queue>``
or the queue's name again, as 0018 made it. A worker of an earlier release takes
``keyed:<queue>`` for a queue it does not serve: it finds those jobs at its next poll."""

from django.db import migrations

from jobs.drivers import postgres
from jobs.migrations._mariadb import on_vendor

# The trigger as 0018 made it, for going back.
PREVIOUS_TRIGGER = f"""
CREATE OR REPLACE FUNCTION jobs_notify_enqueued() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('{postgres.CHANNEL}', CASE WHEN keyed THEN queue ELSE 'plain:' || queue END)
       FROM (SELECT queue, bool_or(concurrency_key IS NOT NULL OR rate_key IS NOT NULL) AS keyed
               FROM new_jobs
              WHERE status = 'queued' AND run_at <= now()
              GROUP BY queue) AS due;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [("platform", "0024_running_key_without_type_keys_on_mariadb")]
    operations = [on_vendor("postgresql", [postgres.CREATE_NOTIFY_TRIGGER], [PREVIOUS_TRIGGER])]
