"""``manage.py reconcile`` (every 15 minutes): queue syncs for stale work connections."""

from jobs import TimerCommand


class Command(TimerCommand):
    help = "Run the 'reconcile' timer: queue workmanagement.sync for active connections not synced for 15 minutes."
    timer = "reconcile"
