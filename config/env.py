"""Typed reading of environment settings that fails loudly.

django-environ does the parsing; this module turns its errors (and values out of range)
into ImproperlyConfigured naming the variable, so a bad setting stops start-up with a
message that says which one and why.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()

_MISSING = object()


def _read(name: str, cast: Callable[..., Any], default: Any, kind: str) -> Any:
    try:
        return cast(name, default=default)
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(f"Setting {name} must be {kind}, got {env.str(name)!r} ({exc}).") from None


def number(name: str, default: float, *, minimum: float = 0.0) -> float:
    """A float setting (seconds, ratios), at least ``minimum``."""
    value = _read(name, env.float, default, "a number")
    if value < minimum:
        raise ImproperlyConfigured(f"Setting {name} must be at least {minimum}, got {value}.")
    return value


def integer(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    """An int setting, at least ``minimum`` (and at most ``maximum`` when given)."""
    value = _read(name, env.int, default, "a whole number")
    if value < minimum:
        raise ImproperlyConfigured(f"Setting {name} must be at least {minimum}, got {value}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"Setting {name} must be at most {maximum}, got {value}.")
    return value


def flag(name: str, default: bool) -> bool:
    raw = env.str(name, default="")
    if raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"Setting {name} must be true or false, got {raw!r}.")


def text(name: str, default: str = "") -> str:
    return env.str(name, default=default)


def choice(name: str, default: str, choices: Iterable[str]) -> str:
    allowed = tuple(choices)
    value = env.str(name, default=default)
    if value not in allowed:
        raise ImproperlyConfigured(f"Setting {name} must be one of {', '.join(allowed)}, got {value!r}.")
    return value


def secret(name: str) -> str:
    """A credential (a key, a token): read as it is, without django-environ's ``$VAR``
    expansion; spaces or control characters in it are refused, and no message repeats it."""
    value = env.ENVIRON.get(name, "")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ImproperlyConfigured(
            f"Setting {name} holds spaces, line breaks or control characters; the value is not shown."
        )
    return value


def secrets(name: str) -> list[str]:
    """Comma-separated credentials (a current one first, then the ones being retired), read
    as ``secret`` reads one: no ``$VAR`` expansion, and no message repeats a value."""
    return [part for part in secret(name).split(",") if part]


def url(name: str, default: str, *, schemes: Iterable[str] = ("http", "https")) -> str:
    """An absolute URL with one of ``schemes``. The value is not repeated in the message:
    a URL can carry credentials."""
    allowed = tuple(schemes)
    value = env.str(name, default=default)
    try:
        parts = urlsplit(value)
        valid = parts.scheme in allowed and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        valid = False
    if not valid:
        raise ImproperlyConfigured(
            f"Setting {name} must be an absolute {' or '.join(allowed)} URL with a host; the value is not shown."
        )
    return value


def words(name: str, default: str = "") -> list[str]:
    return [part for part in env.list(name, default=default.split(",")) if part]


def networks(name: str, default: str = "") -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Comma-separated addresses or networks (``10.0.0.0/8,127.0.0.1``)."""
    parsed = []
    for part in words(name, default):
        try:
            parsed.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError as exc:
            raise ImproperlyConfigured(f"Setting {name} must list addresses or networks ({exc}).") from None
    return parsed


def database(name: str, default: str) -> dict[str, Any]:
    raw = env.str(name, default=default)
    try:
        config = environ.Env.db_url_config(raw)
    except Exception as exc:  # noqa: BLE001 - django-environ raises several types for a bad URL
        raise ImproperlyConfigured(f"Setting {name} is not a database URL: {raw!r} ({exc}).") from None
    # django-environ passes an unknown scheme through as the "engine" (no dotted path).
    if "." not in (config.get("ENGINE") or ""):
        raise ImproperlyConfigured(f"Setting {name} names an unknown database scheme: {raw!r}.")
    return config


def optional_database(name: str) -> dict[str, Any] | None:
    """A database URL that may be left unset (None); a malformed one stops start-up."""
    if not env.str(name, default=""):
        return None
    return database(name, "")
