"""``manage.py sweep`` (every 5 minutes): reaper, pruning, the email sweep, the backlog metric."""

from jobs.management.timer_command import TimerCommand


class Command(TimerCommand):
    help = "Run the 'sweep' timer: every step registered with @periodic('sweep', ...)."
    timer = "sweep"
