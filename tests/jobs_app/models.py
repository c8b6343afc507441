from django.db import models


class Execution(models.Model):
    """One row per job body that ran to its end: how tests prove exactly-once."""

    job_id = models.BigIntegerField()
    attempt = models.IntegerField()
    pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"job #{self.job_id} try {self.attempt} in pid {self.pid}"


class SlotRun(models.Model):
    """One row per timer step that ran to its end, with its timer and slot: how the timer
    tests prove that each slot ran once."""

    timer = models.CharField(max_length=100)
    slot = models.DateTimeField()
    pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.timer} @ {self.slot:%H:%M:%S} in pid {self.pid}"
