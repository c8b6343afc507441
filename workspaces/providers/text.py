"""Text that the database can store, from what a provider sent.

A provider's strings (a Jira summary, a pull request's body, a webhook's ids) can hold NUL
characters (``\\u0000`` in their JSON) and lone surrogates (``\\ud800``): PostgreSQL's text
and JSON columns refuse the first, the driver cannot encode the second, and either fails the
whole statement, so one item would stop every sync. Every string a provider gives passes
through ``storable`` on its way in, the rule the email pipeline applies to mail headers: NUL
removed, each lone surrogate replaced by U+FFFD.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(value: str) -> str:
    if value.isascii():
        return value.replace("\x00", "")
    return _SURROGATE.sub("\ufffd", value).replace("\x00", "")


def storable_data(value: Any) -> Any:
    """The same for every string (keys too) of JSON data: lists, objects, scalars."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list | tuple):
        return [storable_data(item) for item in value]
    if isinstance(value, dict):
        return {storable(str(key)): storable_data(item) for key, item in value.items()}
    return value
