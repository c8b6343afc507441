"""What enqueue accepts, checked before anything is written.

A payload is a JSON object of JSON values, small and shallow (ids, not data); a dedupe key
is a string that fits its column; ``run_at`` is a timezone-aware moment within bounds; a
priority is one of the four names. Anything else is refused with the engine's own error,
``InvalidPayload`` or ``InvalidJobOption``, before the first statement: a database error
in the middle of an enqueue would abort the caller's whole transaction, and a value the
database takes but should not (an infinite ``run_at``) breaks every page that shows it.

PostgreSQL refuses some of what Python's ``json`` writes: NUL in text (jsonb and varchar
both), and lone surrogates (not UTF-8; ``json`` writes them as ``\\ud800`` escapes, which
jsonb rejects). Python strings may also hold surrogate pairs, which would come back as one
other character: refused too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from jobs.conf import jobs_settings
from jobs.errors import InvalidJobOption, InvalidPayload
from jobs.models import Job, priority_number

if TYPE_CHECKING:
    from jobs.registry import JobType

#: The dedupe_key column's length.
DEDUPE_KEY_LENGTH: int = Job._meta.get_field("dedupe_key").max_length or 255
#: How far in the past a run_at may be: slack for producers' clocks and computed moments.
#: Earlier would also put a job ahead of everything queued since (claim order is priority,
#: run_at, id).
PAST_SLACK = timedelta(days=1)


# --- payloads -------------------------------------------------------------------------------


# One encoder for every payload (``json.dumps`` with an option makes one per call).
_ENCODER = json.JSONEncoder(allow_nan=False)


def payload_text(payload: Any) -> str:
    """The payload as the JSON text that is stored, once it passed every check.

    Enqueue is on every producer's path, so the checks read the JSON text first (C speed):
    only a text that hints at a problem (an escaped NUL or surrogate, more brackets than
    levels allowed) has its values walked one by one."""
    if not isinstance(payload, dict):
        raise InvalidPayload(f"The payload must be a dict of JSON values, got {type(payload).__name__}.")
    for key in payload:
        if not isinstance(key, str):  # they become the handler's keyword arguments
            raise InvalidPayload(f"The payload's keys must be strings, got the key {key!r}.")
    max_depth = jobs_settings.MAX_PAYLOAD_DEPTH
    try:
        text = _ENCODER.encode(payload)
    except RecursionError:
        raise InvalidPayload(
            f"The payload is nested deeper than {max_depth} levels (JOBS_MAX_PAYLOAD_DEPTH)."
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidPayload(f"The payload is not JSON-safe: {exc}.") from None
    # ensure_ascii (json's default) makes the text ASCII: characters are bytes.
    limit = jobs_settings.MAX_PAYLOAD_BYTES
    if len(text) > limit:
        raise InvalidPayload(
            f"The payload is {len(text):,} bytes of JSON; at most {limit:,} are accepted "
            "(JOBS_MAX_PAYLOAD_BYTES). Put ids in a payload, not data."
        )
    if "\\u0000" in text or "\\ud" in text or text.count("{") + text.count("[") > max_depth:
        _check_tree(payload, max_depth)
    return text


def result_text(value: Any) -> str:
    """A workflow step's result as the JSON text its successors read: any JSON value, held
    to what a payload may be (size, depth, characters)."""
    text = payload_text({"result": value})
    return text[len('{"result": ') : -1]


def _check_tree(payload: dict[str, Any], max_depth: int) -> None:
    """Every key and string of the payload, to ``max_depth`` levels (the payload is level 1).

    A loop over a stack rather than recursion, so no nesting can exhaust Python's stack."""
    stack: list[tuple[Any, int, str]] = [(payload, 1, "payload")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            _check_text(value, path, InvalidPayload)
        elif isinstance(value, dict | list | tuple):
            if depth > max_depth:
                raise InvalidPayload(
                    f"The payload is nested deeper than {max_depth} levels (JOBS_MAX_PAYLOAD_DEPTH), at {path}."
                )
            if isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(key, str):  # others are written as JSON writes them ("1")
                        _check_text(key, f"a key of {path}", InvalidPayload)
                    stack.append((item, depth + 1, f"{path}[{_short(key)}]"))
            else:
                stack.extend((item, depth + 1, f"{path}[{index}]") for index, item in enumerate(value))


def _check_text(text: str, where: str, error: type[Exception]) -> None:
    if "\x00" in text:
        raise error(f"A NUL character in {where}: PostgreSQL cannot store it.")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise error(
                f"A lone surrogate (half of a UTF-16 pair, not a character) in {where}: "
                "PostgreSQL cannot store it."
            ) from None


def _short(key: object) -> str:
    if isinstance(key, str) and len(key) > 40:
        key = key[:39] + "…"
    return repr(key)


# --- options --------------------------------------------------------------------------------


def dedupe_key(key: object, *, error: type[Exception] = InvalidJobOption) -> str | None:
    """A dedupe key that fits its column. ``error`` is ``InvalidPayload`` for a key made
    from the payload's fields (the payload is what to fix), else ``InvalidJobOption``."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise error(f"A dedupe key must be a string, got {type(key).__name__}.")
    if len(key) > DEDUPE_KEY_LENGTH:
        raise error(f"A dedupe key may be at most {DEDUPE_KEY_LENGTH} characters, got {len(key):,}.")
    _check_text(key, "the dedupe key", error)
    return key


#: The limit-key columns' length (``Job.concurrency_key``, ``Job.rate_key``).
LIMIT_KEY_LENGTH: int = Job._meta.get_field("concurrency_key").max_length or 255


def limit_key(key: str | None) -> str | None:
    """A flow-control key made from the payload's fields (``jobs.flow.limits``) that fits
    its column: the payload is what to fix."""
    if key is None:
        return None
    if len(key) > LIMIT_KEY_LENGTH:
        raise InvalidPayload(f"A limit key may be at most {LIMIT_KEY_LENGTH} characters, got {len(key):,}.")
    _check_text(key, "the limit key", InvalidPayload)
    return key


def limit_keys(job_type: JobType, payload: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The flow-control keys a job of ``job_type`` stores (``jobs.flow.limits``), enqueued
    or a workflow step's, each fitting its column."""
    if job_type.limits is None:
        return None, None
    concurrency_key, rate_key = job_type.limits.keys(job_type.name, payload)
    return limit_key(concurrency_key), limit_key(rate_key)


def run_at(moment: object) -> datetime | None:
    """A timezone-aware moment from a day ago to ``JOBS_MAX_RUN_AT_DAYS`` ahead, or None
    (due now)."""
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        shown = repr(moment)
        raise InvalidJobOption(
            f"run_at must be a datetime, got {type(moment).__name__} {shown[:60]}"
            f"{'…' if len(shown) > 60 else ''}."
        )
    if timezone.is_naive(moment):
        raise InvalidJobOption(f"run_at must be timezone-aware, got the naive {moment.isoformat()}.")
    now = timezone.now()
    days = jobs_settings.MAX_RUN_AT_DAYS
    earliest, latest = now - PAST_SLACK, now + timedelta(days=days)
    if not earliest <= moment <= latest:
        raise InvalidJobOption(
            f"run_at must be between a day ago and {days:g} days ahead (JOBS_MAX_RUN_AT_DAYS), "
            f"got {moment.isoformat()}."
        )
    return moment


def priority(name: object) -> int:
    """The stored number of a priority name."""
    try:
        return priority_number(name)
    except ValueError as exc:
        raise InvalidJobOption(str(exc)) from None
