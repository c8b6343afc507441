"""``manage.py trial_sweep`` (hourly): email organizations whose trial ends within 3 days."""

from jobs import TimerCommand


class Command(TimerCommand):
    help = "Run the 'trial_sweep' timer: email organizations whose trial ends within 3 days, once per trial."
    timer = "trial_sweep"
