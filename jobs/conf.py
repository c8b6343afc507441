"""The engine's settings: every one named ``JOBS_*``, declared here once with its default and
its rule, and read through ``jobs_settings`` (``docs/settings.md``).

Nothing is written onto ``django.conf.settings``: the first read of each asks the project's
settings and keeps the value until a setting changes (Django's ``setting_changed``, which
``override_settings`` and pytest-django's ``settings`` send), so a change applies at once; a
project that sets none of them runs on the defaults below. ``jobs.checks`` validates the
values (``platform.E001``).
"""

from __future__ import annotations

import ipaddress
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.core.signals import setting_changed

type Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_MISSING = object()


def at_least(minimum: float) -> Callable[[Any], str | None]:
    def rule(value: Any) -> str | None:
        return None if value >= minimum else f"must be at least {minimum}"

    return rule


def one_of(*choices: str) -> Callable[[Any], str | None]:
    def rule(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"

    return rule


def _networks(value: Any) -> tuple[Network, ...]:
    """Addresses or networks, as ``ip_network`` objects or as text (``"10.0.0.0/8"``)."""
    if isinstance(value, str):  # one string is one entry, not a list of characters
        value = [value]
    return tuple(
        entry
        if isinstance(entry, ipaddress.IPv4Network | ipaddress.IPv6Network)
        else ipaddress.ip_network(str(entry).strip(), strict=False)
        for entry in value
    )


def _queue_limits(value: Any) -> str | None:
    """``JOBS_QUEUES``: each queue's flow limits (``jobs.flow.queues``)."""
    from jobs.flow.queues import settings_problem

    problem = settings_problem()
    return f"is wrong: {problem.rstrip('.')}" if problem else None


@dataclass(frozen=True)
class Setting:
    """One engine setting: the default, what its value must be, and the name it had before
    it joined the ``JOBS_`` namespace (still read, with a deprecation warning)."""

    default: Any
    rule: Callable[[Any], str | None] | None = None
    old_name: str | None = None
    parse: Callable[[Any], Any] | None = None
    kind: type | tuple[type, ...] | None = None
    name: str = field(default="", compare=False)

    def __set_name__(self, owner: type, attr: str) -> None:
        object.__setattr__(self, "name", f"JOBS_{attr}")

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.raw()
        value = self.parse(value) if self.parse is not None else value
        # Kept on the instance, where the next read finds it without this descriptor: the
        # hot paths read settings on every statement, and asking Django's settings for one
        # a project did not set raises and catches an AttributeError each time (tens of
        # microseconds of a wake-up, cold). ``_forget`` drops them all when one changes.
        instance.__dict__[self.name.removeprefix("JOBS_")] = value
        return value

    def raw(self) -> Any:
        """The value as the project set it (or the default)."""
        value = getattr(settings, self.name, _MISSING)
        if value is _MISSING and self.old_name is not None:
            value = getattr(settings, self.old_name, _MISSING)
            if value is not _MISSING:
                _warn_renamed(self.old_name, self.name)
        return self.default if value is _MISSING else value

    def given_under_old_name(self) -> bool:
        return (
            self.old_name is not None
            and not hasattr(settings, self.name)
            and hasattr(settings, self.old_name)
        )

    def problem(self) -> str | None:
        """What is wrong with the project's value, or None."""
        value = self.raw()
        if value is None and self.default is None:
            return None
        expected = self.kind or _kind_of(self.default)
        # True is an int to isinstance, not a number to anyone writing settings.
        wrong_bool = isinstance(value, bool) and bool not in _as_tuple(expected)
        if wrong_bool or not isinstance(value, expected):
            return f"must be {_described(expected)}, got {type(value).__name__}"
        try:
            value = self.parse(value) if self.parse is not None else value
        except (TypeError, ValueError) as exc:
            return f"must list addresses or networks ({exc})"
        return self.rule(value) if self.rule is not None else None


def _setting[T](
    default: T,
    rule: Callable[[Any], str | None] | None = None,
    *,
    old_name: str | None = None,
    kind: type | tuple[type, ...] | None = None,
) -> T:
    # Typed as its value: ``jobs_settings.POLL_INTERVAL`` is a float to the type checker.
    return cast(T, Setting(default, rule, old_name=old_name, kind=kind))


def _kind_of(default: Any) -> type | tuple[type, ...]:
    if isinstance(default, bool):
        return bool
    if isinstance(default, float):
        return (int, float)
    return type(default)


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _described(kind: type | tuple[type, ...]) -> str:
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}
    kinds = _as_tuple(kind)
    if kinds == (int, float):
        return "a number"
    return " or ".join(names.get(each, f"a {each.__name__}") for each in kinds)


_warned: set[str] = set()


def _warn_renamed(old: str, new: str) -> None:
    if old not in _warned:
        _warned.add(old)
        warnings.warn(f"Setting {old} is deprecated: name it {new}.", DeprecationWarning, stacklevel=4)


class JobsSettings:
    """The engine's settings, each read from the project's ``JOBS_<NAME>`` when asked for."""

    POLL_INTERVAL: float = _setting(1.0, at_least(0.01))
    HEARTBEAT_INTERVAL: float = _setting(15.0, at_least(0.1))
    REAP_AFTER: float = _setting(300.0, at_least(0.1))
    WORKER_LEASE: float = _setting(60.0, at_least(0.1))
    SHUTDOWN_TIMEOUT: float = _setting(120.0, at_least(0))
    PROGRESS_INTERVAL: float = _setting(0.5, at_least(0.05))
    PREFETCH_WINDOW: float = _setting(0.02, at_least(0))
    MAX_PREFETCH: int = _setting(32, at_least(0))
    ACK_BATCH: int = _setting(32, at_least(1))
    # Seconds: jobs known to end within this may borrow the fair share's reserved slot
    # while no other queue has due jobs (jobs.worker.pool); 0: never.
    SHARE_BORROW_LIMIT: float = _setting(1.0, at_least(0))
    PREPARED_STATEMENTS: bool = _setting(True)
    WORKER_ASYNC_COMMIT: bool = _setting(True)
    # "transaction" when the default database goes through a pooler in transaction mode
    # (PgBouncer's pool_mode = transaction): nothing may rely on session state.
    DATABASE_POOL_MODE: str = _setting(
        "session", one_of("session", "transaction"), old_name="DATABASE_POOL_MODE"
    )
    LISTEN_DATABASE: dict[str, Any] | None = _setting(None, kind=dict)
    KEEP_FINISHED_DAYS: float = _setting(14.0, at_least(0))
    PRUNE_BATCH: int = _setting(5000, at_least(1))
    MAX_PAYLOAD_BYTES: int = _setting(64 * 1024, at_least(2))
    MAX_PAYLOAD_DEPTH: int = _setting(32, at_least(1))
    MAX_RUN_AT_DAYS: float = _setting(365.0, at_least(0.01))
    # The longest a job that raised RetryLater waits before it runs again, whatever the
    # host asked for (a rate limit's reset, a Retry-After).
    MAX_RETRY_LATER_SECONDS: float = _setting(6 * 3600.0, at_least(1))
    # The most steps a workflow holds, those added while it runs included (``jobs.workflow``).
    WORKFLOW_MAX_STEPS: int = _setting(10_000, at_least(1))
    ADMIN_TEXT_CHARS: int = _setting(20_000, at_least(100))
    CLOUDWATCH_NAMESPACE: str = _setting("")
    METRICS_WINDOW: float = _setting(300.0, at_least(1))
    METRICS_TOKEN: str = _setting("")
    METRICS_ALLOWED_IPS: tuple[Network, ...] = cast(
        "tuple[Network, ...]", Setting((), parse=_networks, kind=(list, tuple, str))
    )
    AWS_REGION: str = _setting("eu-central-1", old_name="AWS_REGION")
    AWS_ENDPOINT_URL: str = _setting("", old_name="AWS_ENDPOINT_URL")
    SCHEDULER: bool = _setting(True)
    SCHEDULE_GRACE: float = _setting(60.0, at_least(0))
    SCHEDULE_CATCH_UP_WINDOW: float = _setting(86400.0, at_least(0))
    SCHEDULE_CLOCK_OFFSET: float = _setting(0.0)
    # Each try's log (jobs.try_log): the lowest level kept, and its bounds per try.
    TRY_LOG_LEVEL: str = _setting("INFO", one_of("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
    TRY_LOG_LINES: int = _setting(1000, at_least(2))
    TRY_LOG_BYTES: int = _setting(64 * 1024, at_least(1024))
    # How long the charts' rollup and the queue depth samples are kept (jobs.rollup).
    ROLLUP_KEEP_DAYS: float = _setting(7.0, at_least(1))
    # False: a project adding the engine keeps its own django-q2 task lists in the admin index.
    DJANGO_Q_SCHEDULER_ONLY: bool = _setting(False, old_name="DJANGO_Q_SCHEDULER_ONLY")
    # Dotted names of functions django-q2 may run besides the timers (jobs.schedule_guard).
    DJANGO_Q_ALLOWED_FUNCTIONS: tuple[str, ...] = _setting((), kind=(list, tuple))
    # Flow control (``jobs.flow``): each queue's fleet-wide limits, e.g.
    # {"ai": {"concurrency": 4, "rate": "100/m"}}; an operator's, set on the page, replace them.
    QUEUES: dict[str, Any] = _setting({}, _queue_limits, kind=dict)
    # The most jobs a lease hands a worker of a type far from its limits, to take without
    # the type's gate (``jobs.flow.leases``); 0: no leases.
    FLOW_LEASE: int = _setting(4096, at_least(0))


jobs_settings = JobsSettings()


def _forget(**kwargs: Any) -> None:
    """A setting changed (in tests, through ``override_settings`` or pytest-django): the
    values read so far are read again. Any setting, not just ``JOBS_*`` ones: a setting's old
    name counts too, and changes happen in tests only."""
    vars(jobs_settings).clear()


setting_changed.connect(_forget, dispatch_uid="jobs.conf.forget")


def declared() -> list[Setting]:
    """Every engine setting, in the order above."""
    return [value for value in vars(JobsSettings).values() if isinstance(value, Setting)]


#: Each setting's name and default, for the documentation and the checks.
DEFAULTS: dict[str, Any] = {each.name: each.default for each in declared()}
