"""Typed reading of environment settings that fails loudly, and never shows a secret.

django-environ does the parsing; this module turns its errors (and values out of range)
into ImproperlyConfigured naming the variable, so a bad setting stops start-up with a
message that says which one and why. Start-up errors end up in logs that more people read
than may know the secrets: a message shows no value of a setting whose name says it is
secret (``…KEY``, ``…TOKEN``, ``…PASSWORD``, ``…SECRET``), and no password of a URL.
"""

from __future__ import annotations

import ipaddress
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()

_MISSING = object()

#: Words in a setting's name that make its value secret.
SECRET_WORDS = ("SECRET", "PASSWORD", "PASSWD", "TOKEN", "KEY", "CREDENTIAL", "PRIVATE")
# scheme://user:password@ — greedy up to the netloc's last "@", as URL parsers read it.
_URL_PASSWORD = re.compile(r"(?P<start>[a-z][a-z0-9+.-]*://[^:/?#@\s]*):(?P<password>[^/?#\s]*)@", re.I)


def is_secret(name: str) -> bool:
    return any(word in name.upper() for word in SECRET_WORDS)


def redact(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``."""
    return _URL_PASSWORD.sub(r"\g<start>:***@", text)


def shown(name: str, raw: str) -> str:
    """How an error message may quote the value of setting ``name``."""
    return "a value that is not shown (the setting is secret)" if is_secret(name) else repr(redact(raw))


def _read(name: str, cast: Callable[..., Any], default: Any, kind: str) -> Any:
    try:
        return cast(name, default=default)
    except (ValueError, TypeError) as exc:
        # The parser's own message repeats the value: left out for a secret.
        detail = "" if is_secret(name) else f" ({redact(str(exc))})"
        raise ImproperlyConfigured(
            f"Setting {name} must be {kind}, got {shown(name, env.str(name))}{detail}."
        ) from None


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
    raise ImproperlyConfigured(f"Setting {name} must be true or false, got {shown(name, raw)}.")


def text(name: str, default: str = "") -> str:
    return env.str(name, default=default)


def choice(name: str, default: str, choices: Iterable[str]) -> str:
    allowed = tuple(choices)
    value = env.str(name, default=default)
    if value not in allowed:
        raise ImproperlyConfigured(
            f"Setting {name} must be one of {', '.join(allowed)}, got {shown(name, value)}."
        )
    return value


def given(kind: str, *names: str) -> dict[str, Any]:
    """The settings among ``names`` that the environment sets, each read as ``kind``
    (``number``, ``integer``, ``flag`` or ``text``); the others are left out, to the defaults
    of the app that reads them (the engine's own, for ``JOBS_*``), which also checks ranges."""
    readers: dict[str, Callable[[str], Any]] = {
        "number": lambda name: _read(name, env.float, None, "a number"),
        "integer": lambda name: _read(name, env.int, None, "a whole number"),
        "flag": lambda name: flag(name, False),
        "text": text,
    }
    read = readers[kind]
    return {name: read(name) for name in names if env.ENVIRON.get(name, "") != ""}


def renamed(name: str, old_name: str) -> str:
    """The variable to read for ``name``: ``old_name`` while only it is set (with a
    deprecation warning), so an environment written before the rename keeps working."""
    if old_name in env.ENVIRON and name not in env.ENVIRON:
        warnings.warn(
            f"The environment variable {old_name} is deprecated: name it {name}.",
            DeprecationWarning,
            stacklevel=2,
        )
        return old_name
    return name


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


def optional_url(name: str) -> str:
    """An absolute http(s) URL that may be left unset (empty)."""
    return url(name, "") if env.str(name, default="") else ""


def secret_key(name: str, *, required: bool, fallback: str) -> str:
    """A key that production must set: ``fallback`` only where it is not ``required`` (a
    development machine); otherwise its absence stops start-up. Read as it is, without
    django-environ's ``$VAR`` expansion: Django's own generated keys may start with "$"."""
    value = env.ENVIRON.get(name, "")
    if value:
        return value
    if required:
        raise ImproperlyConfigured(
            f"Setting {name} is required when DEBUG is off: set it to a long random value, e.g. "
            "the output of python -c 'import secrets; print(secrets.token_urlsafe(50))', and keep it "
            "secret (on a development machine, set DEBUG=true instead)."
        )
    return fallback


def origins(name: str, default: str = "") -> list[str]:
    """Comma-separated origins with their scheme (``https://jobs.example.com``)."""
    found = words(name, default)
    for origin in found:
        if not re.fullmatch(r"https?://[^/\s]+", origin):
            raise ImproperlyConfigured(
                f"Setting {name} must list origins such as https://jobs.example.com "
                f"(scheme and host, no path), got {shown(name, origin)}."
            )
    return found


def proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """The header a TLS-terminating proxy sets on a request that came over HTTPS, written
    as on the wire (``X-Forwarded-Proto: https``), as Django wants it
    (``("HTTP_X_FORWARDED_PROTO", "https")``); None when unset. Set it only behind such a
    proxy, one that overwrites the header: a client could otherwise claim HTTPS itself."""
    raw = env.str(name, default="").strip()
    if not raw:
        return None
    header, _, value = raw.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9-]+", header.strip()) or not value.strip():
        raise ImproperlyConfigured(
            f"Setting {name} must be a header and its value as on the wire, e.g. "
            f"'X-Forwarded-Proto: https', got {shown(name, raw)}."
        )
    return "HTTP_" + header.strip().upper().replace("-", "_"), value.strip()


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
    """A database URL; an error shows it with its password replaced by ``***``."""
    raw = env.str(name, default=default)
    try:
        config = environ.Env.db_url_config(raw)
    except Exception as exc:  # noqa: BLE001 - django-environ raises several types for a bad URL
        raise ImproperlyConfigured(
            f"Setting {name} is not a database URL: {_without_password(raw)} ({_without_password(str(exc), raw)})."
        ) from None
    # django-environ passes an unknown scheme through as the "engine" (no dotted path).
    if "." not in (config.get("ENGINE") or ""):
        raise ImproperlyConfigured(
            f"Setting {name} names an unknown database scheme: {_without_password(raw)}."
        )
    return config


def optional_database(name: str) -> dict[str, Any] | None:
    """A database URL that may be left unset (None); a malformed one stops start-up."""
    if not env.str(name, default=""):
        return None
    return database(name, "")


def _without_password(text: str, url: str | None = None) -> str:
    """``text`` (by default the URL itself) with the URL's password nowhere in it."""
    shown_text = redact(text if url is not None else repr(text))
    password = _URL_PASSWORD.search(url or text)
    if password and password.group("password"):
        shown_text = shown_text.replace(password.group("password"), "***")
    return shown_text
