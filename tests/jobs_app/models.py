from django.db import models


class Execution(models.Model):
    """One row per job body that ran to its end: how tests prove exactly-once."""

    job_id = models.BigIntegerField()
    attempt = models.IntegerField()
    pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
