"""Reading a delivery's JSON without trusting its shape: a verified delivery is the
provider's, but a body nested past reason is refused, and a field it leaves out or sends as
another type (a number "²", one past the database's range) reads as absent rather than
failing the request."""

from __future__ import annotations

import json
from typing import Any

from workspaces.providers.text import storable

#: The largest number a delivery may name (a pull request's, an item's): PostgreSQL's integer.
MAX_NUMBER = 2**31 - 1


class Unreadable(ValueError):
    def __init__(self, message: str = "The body is not a JSON object.") -> None:
        super().__init__(message)


def parse(body: bytes, *, max_depth: int) -> dict[str, Any]:
    """The delivery's JSON object; ``Unreadable`` (with the reason) for anything else."""
    try:
        payload = json.loads(body)
    except RecursionError:  # the decoder's own bound, far past ``max_depth``
        raise Unreadable(f"The body is nested deeper than {max_depth} levels (WEBHOOK_MAX_DEPTH).") from None
    except ValueError:
        raise Unreadable() from None
    if not isinstance(payload, dict):
        raise Unreadable()
    if depth(payload, limit=max_depth) > max_depth:
        raise Unreadable(f"The body is nested deeper than {max_depth} levels (WEBHOOK_MAX_DEPTH).")
    return payload


def depth(data: Any, *, limit: int) -> int:
    """How deep ``data`` nests (an object or a list is a level), counted without recursion
    and no further than one past ``limit``."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if not isinstance(value, dict | list):
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((item, level + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest


def number(data: Any, *path: str) -> int | None:
    """The whole number at ``path`` (a JSON number or ASCII digits), 0 to ``MAX_NUMBER``;
    None otherwise."""
    *parents, key = path
    value = obj(data, *parents).get(key)
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NUMBER:
        return None
    return value


def obj(data: Any, *path: str) -> dict[str, Any]:
    """The object at ``path`` ({} when absent or not an object)."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def text(data: Any, *path: str) -> str:
    """The string (or number, as text) at ``path``, storable (``providers.text``); "" when
    absent."""
    *parents, key = path
    value = obj(data, *parents).get(key)
    if isinstance(value, bool) or value is None:
        return ""
    return storable(str(value)) if isinstance(value, str | int) else ""


def objects(data: Any, *path: str) -> list[dict[str, Any]]:
    """The objects of the list at ``path``."""
    *parents, key = path
    value = obj(data, *parents).get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
