"""Timers as schedules in the database: every slot of a ``@periodic`` timer runs exactly
once across the fleet, missed slots are caught up by the timer's policy, and operators see
and steer the timers on the admin's Timers page.

    calendar      when a timer's slots fall (an interval, or cron in a time zone): pure
    declarations  what ``@periodic`` declares, merged per timer; the job type of its runs
    planner       which slots are due now, and what the catch-up policy makes of them: pure
    booking       records due slots (one row per timer and slot, unique) and enqueues runs
    runs          a run's body: the timer's steps, in a worker's job or in a command
    outside       ``manage.py sweep`` and django-q2: the nearest slot through the same key
    install       the declarations as rows (at migrate and when a worker starts)
    ticker        what ``runworker`` calls between claims to book due slots
    health        timers whose last successful slot is too old: page, check, metrics
    clock         the one place the schedules read the time

A slot's job is keyed ``timer:<name>@<slot in UTC>``; the row (timer, slot) is what makes a
slot run once, whoever books it (any worker, cron, django-q2) and whenever.
"""
