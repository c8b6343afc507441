"""Reading fields out of a delivery's JSON without trusting its shape: a verified delivery is
the provider's, but a field it leaves out or sends as another type must read as absent,
not fail the request."""

from __future__ import annotations

from typing import Any


def obj(data: Any, *path: str) -> dict[str, Any]:
    """The object at ``path`` ({} when absent or not an object)."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def text(data: Any, *path: str) -> str:
    """The string (or number, as text) at ``path``; "" when absent."""
    *parents, key = path
    value = obj(data, *parents).get(key)
    if isinstance(value, bool) or value is None:
        return ""
    return str(value) if isinstance(value, str | int) else ""


def objects(data: Any, *path: str) -> list[dict[str, Any]]:
    """The objects of the list at ``path``."""
    *parents, key = path
    value = obj(data, *parents).get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
