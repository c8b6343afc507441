"""A job type's flow limits, as ``@job`` declares them, and the limit keys an enqueue
stores on each row.

    @job("repository.ingest", concurrency=1, concurrency_key="repository:{repository_id}")
    @job("ai.summarise", rate="60/m")                    # the type: 60 starts a minute
    @job("tracker.call", rate="10/s", rate_key="connection:{connection_id}")

``concurrency`` limits the jobs running at once across the fleet: of each key when the type
names a ``concurrency_key`` (a template over payload fields, like ``dedupe``), else of the
type. ``rate`` limits the starts in any window of its period, per ``rate_key`` or per type.

Limit keys are one namespace: types that name the same key share its limit (a GitHub
token's repository, say, for both pull-request and check syncs), each holding to its own
number. A type's own limit is kept under ``type:<name>`` and a queue's under ``queue:<name>``,
so a template may not start with either prefix. A payload without a key's field is not
limited by that key (as a payload without a dedupe field is not deduplicated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from jobs.flow.rates import Rate
from jobs.keys import KeyTemplate

TYPE_PREFIX = "type:"
QUEUE_PREFIX = "queue:"
RESERVED = (TYPE_PREFIX, QUEUE_PREFIX)
#: The most jobs a concurrency limit may allow at once.
MOST_CONCURRENT = 100_000


def type_key(name: str) -> str:
    """The limit key of a type's own (keyless) limit."""
    return f"{TYPE_PREFIX}{name}"


def split_type_keys(keys: Sequence[str]) -> tuple[list[str], list[str]]:
    """``keys`` as (the types' own keys, the per-key ones): an index of running keys holds
    only the latter; a type's running jobs are counted from the running rows."""
    return [key for key in keys if key.startswith(TYPE_PREFIX)], [
        key for key in keys if not key.startswith(TYPE_PREFIX)
    ]


def queue_key(queue: str) -> str:
    """The gate key of a queue's limits."""
    return f"{QUEUE_PREFIX}{queue}"


def concurrency_number(value: object, where: str) -> int | None:
    """A concurrency as written in code or settings: a whole number from 1, or None."""
    if value is None:
        return None
    if type(value) is not int or not 1 <= value <= MOST_CONCURRENT:
        raise ImproperlyConfigured(
            f"{where} must be a whole number from 1 to {MOST_CONCURRENT:,}, got {value!r}."
        )
    return value


@dataclass(frozen=True)
class TypeLimits:
    """What one job type declares: at most ``concurrency`` running (per key or for the
    type), at most ``rate`` starts per period (per key or for the type)."""

    concurrency: int | None = None
    concurrency_key: KeyTemplate | None = None
    rate: Rate | None = None
    rate_key: KeyTemplate | None = None

    @classmethod
    def declare(
        cls,
        name: str,
        *,
        concurrency: int | None = None,
        concurrency_key: str | None = None,
        rate: str | Rate | None = None,
        rate_key: str | None = None,
    ) -> TypeLimits | None:
        """The limits ``@job`` (or a task's OPTIONS) declares for type ``name``; None for none.
        A bad declaration is ``ImproperlyConfigured``, where it is written."""
        where = f"Job type {name!r}"
        number = concurrency_number(concurrency, f"{where}: concurrency")
        if concurrency_key is not None and number is None:
            raise ImproperlyConfigured(f"{where}: concurrency_key needs concurrency=N (at most N per key).")
        parsed = Rate.declared(rate, f"{where}: rate") if rate is not None else None
        if rate_key is not None and parsed is None:
            raise ImproperlyConfigured(f"{where}: rate_key needs rate='N/s|m|h' (at most N per key).")
        if number is None and parsed is None:
            return None
        return cls(
            number,
            _template(concurrency_key, where, "concurrency_key"),
            parsed,
            _template(rate_key, where, "rate_key"),
        )

    def keys(self, type_name: str, payload: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """The (concurrency key, rate key) an enqueue of ``payload`` stores on its row."""
        return (
            _key(self.concurrency, self.concurrency_key, type_name, payload),
            _key(self.rate, self.rate_key, type_name, payload),
        )

    def effective(
        self, type_name: str, stored: tuple[str | None, str | None]
    ) -> tuple[str | None, str | None]:
        """The keys a claim holds a row of this type to, from the keys it stored: the
        type's own key for a type-wide limit (also for a row enqueued before the type
        declared it), the stored one for a per-key limit, none where nothing is declared."""
        concurrency = None
        if self.concurrency is not None:
            concurrency = type_key(type_name) if self.concurrency_key is None else stored[0]
        rate = None
        if self.rate is not None:
            rate = type_key(type_name) if self.rate_key is None else stored[1]
        return concurrency, rate

    def describe(self) -> list[str]:
        """The limits in words, for the admin and the worker's log."""
        said = []
        if self.concurrency is not None:
            per = f" per {self.concurrency_key.template}" if self.concurrency_key else ""
            said.append(f"at most {self.concurrency:,} running{per}")
        if self.rate is not None:
            per = f" per {self.rate_key.template}" if self.rate_key else ""
            said.append(f"{self.rate.describe()} starts{per}")
        return said


def _template(text: str | None, where: str, option: str) -> KeyTemplate | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ImproperlyConfigured(
            f"{where}: {option} must be a key template such as 'repository:{{repository_id}}'."
        )
    if text.startswith(RESERVED):
        raise ImproperlyConfigured(
            f"{where}: {option} {text!r} may not start with {' or '.join(RESERVED)}: "
            "those keys are a type's and a queue's own limits."
        )
    return KeyTemplate(text, kind=f"{where}: {option}")


def _key(
    limit: object, template: KeyTemplate | None, type_name: str, payload: Mapping[str, Any]
) -> str | None:
    if limit is None:
        return None
    if template is None:
        return type_key(type_name)
    return template.render(payload)
