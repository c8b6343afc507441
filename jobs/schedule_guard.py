"""What django-q2 may run here: the platform's timers, and the functions a project names.

A django-q2 schedule names any dotted function and its arguments, so whoever may change a
schedule could otherwise run, say, ``subprocess.getoutput`` in the cluster's worker. The
rule, in one place: a call is allowed when it is ``run_timer`` with the name of a declared
timer (nothing else: no keyword arguments, no result hook, no chain), or when its function
is in ``JOBS_DJANGO_Q_ALLOWED_FUNCTIONS``. The schedules' admin refuses to save any other
(``jobs.admin.scheduler_page``), and ``guard_task`` turns any other task django-q2 is about
to queue (a schedule edited outside the admin, a resubmitted task) into one that only
fails, saying why.
"""

from __future__ import annotations

import ast
import logging
from typing import Any

from jobs.conf import jobs_settings
from jobs.errors import PermanentError
from jobs.schedules import RUN_TIMER

logger = logging.getLogger("jobs.schedules")

REFUSED = "jobs.schedule_guard.refused"


class ScheduleRefused(PermanentError):
    """django-q2 may run only the platform's timers (and JOBS_DJANGO_Q_ALLOWED_FUNCTIONS)."""


def func_name(func: object) -> str:
    """The dotted name django-q2 would import (a task may carry the function itself)."""
    if isinstance(func, str):
        return func
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


def refusal(
    func: object, args: Any = (), kwargs: Any = None, *, hook: object = None, chain: object = None
) -> str:
    """Why django-q2 may not run this call; "" when it may."""
    from jobs.timers import timers

    name = func_name(func)
    if name in jobs_settings.DJANGO_Q_ALLOWED_FUNCTIONS:
        return ""
    if name != RUN_TIMER:
        return f"{name!r} is not one of the platform's timers: django-q2 runs only {RUN_TIMER} here."
    if hook or chain:
        return "A timer's schedule takes no hook and no chain."
    if kwargs:
        return "A timer's schedule takes no keyword arguments."
    if not isinstance(args, tuple) or len(args) != 1 or args[0] not in timers():
        return (
            f"{RUN_TIMER} takes one argument, the name of a declared timer ({', '.join(sorted(timers()))})."
        )
    return ""


def schedule_refusal(
    func: str, args: str | None, kwargs: str | None, hook: str | None, intended_date_kwarg: str | None
) -> str:
    """``refusal`` for a schedule's fields, read as django-q2's scheduler reads them."""
    try:
        parsed_args = ast.literal_eval(args) if args else ()
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return "The arguments are not a Python literal."
    if not isinstance(parsed_args, tuple):
        parsed_args = (parsed_args,)  # django-q2 reads a single value as a 1-tuple
    # Any keyword text counts, parsed or not: django-q2 also reads ``q_options`` (a hook, a
    # chain) from it.
    extra = (kwargs or "").strip() or intended_date_kwarg
    return refusal(func, parsed_args, {"kwargs": extra} if extra else {}, hook=hook)


def guard_task(sender: object, task: dict[str, Any], **kwargs: object) -> None:
    """django-q2's ``pre_enqueue``: a task it may not run becomes one that fails at once,
    with the reason (recorded as a failed task, logged here); the others pass unchanged."""
    reason = refusal(
        task.get("func"),
        task.get("args", ()),
        task.get("kwargs"),
        hook=task.get("hook"),
        chain=task.get("chain"),
    )
    if not reason:
        return
    logger.error("django-q2 task %s refused: %s", task.get("name"), reason)
    task.pop("hook", None)
    task.pop("chain", None)
    task.update(func=REFUSED, args=(reason,), kwargs={})


def refused(reason: str) -> None:
    """What a refused task runs instead: nothing but the failure."""
    raise ScheduleRefused(reason)
