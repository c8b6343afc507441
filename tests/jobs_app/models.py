from django.db import models


class Execution(models.Model):
    """One row per job body that ran to its end: how tests prove exactly-once."""

    job_id = models.BigIntegerField()
    attempt = models.IntegerField()
    pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"job #{self.job_id} try {self.attempt} in pid {self.pid}"
