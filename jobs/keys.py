"""Key templates owned by their job type: ``@job(..., dedupe="email:{email_id}")``, and the
limit keys of flow control (``concurrency_key="repository:{repository_id}"``, ``rate_key``).

A dedupe key template names the payload fields that make a job unique among the queued and
running jobs of its type; a limit key's, the subject a limit counts per (``jobs.flow``). The same template renders the key of a payload at enqueue and,
for a lookup inside a domain queryset, builds the key as a SQL expression from column
references (``OuterRef("pk")``), so no caller ever spells a key.

Every template starts with a fixed prefix ("email:", "repository:"): a bare id such as
"7" would match job #7 and every job keyed 7 in the admin's search.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.models import CharField, Expression, Value
from django.db.models.functions import Cast, Concat

from jobs.errors import InvalidPayload


class KeyTemplate:
    """A parsed key template: fixed text and payload fields, in order."""

    def __init__(self, template: str, kind: str = "Dedupe key") -> None:
        self.template = template
        self.kind = kind
        self._parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ImproperlyConfigured(f"{kind} {template!r}: {exc}.") from None
        for literal, field, spec, conversion in parsed:
            if field is not None and (not field.isidentifier() or spec or conversion):
                # Only plain fields: "{email_id}", never "{email_id:05}" or "{email.id}",
                # so that the SQL form builds exactly the text that enqueue stored.
                raise ImproperlyConfigured(
                    f"{kind} {template!r}: use plain payload fields such as {{email_id}}."
                )
            self._parts.append((literal, field))
        if not self._parts or not self._parts[0][0]:
            raise ImproperlyConfigured(
                f"{kind} {template!r} must start with a prefix naming its kind, e.g. 'email:{{email_id}}'."
            )

    def __repr__(self) -> str:
        return f"KeyTemplate({self.template!r})"

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(field for _, field in self._parts if field is not None)

    def render(self, payload: Mapping[str, Any]) -> str | None:
        """The key of this payload; None when a field of the key is absent or None (a
        payload that names no subject, say "every organization", is not deduplicated)."""
        text = []
        for literal, field in self._parts:
            text.append(literal)
            if field is not None:
                value = payload.get(field)
                if value is None:
                    return None
                text.append(_field_text(field, value, self.kind))
        return "".join(text)

    def expression(self, values: Mapping[str, Any]) -> Expression:
        """The key as a SQL expression; each field is a value or an expression such as
        ``OuterRef("pk")`` (cast to text the way ``render`` writes it)."""
        parts: list[Any] = []
        for literal, field in self._parts:
            if literal:
                parts.append(Value(literal))
            if field is not None:
                value = values[field]
                if hasattr(value, "resolve_expression"):
                    parts.append(Cast(value, output_field=CharField()))
                else:
                    parts.append(Value(_field_text(field, value, self.kind)))
        if len(parts) == 1:
            return parts[0]
        return Concat(*parts, output_field=CharField())

    def check_fields(self, type_name: str, given: Mapping[str, Any]) -> None:
        """Refuse a lookup that does not name exactly the fields of the key."""
        if set(given) != set(self.fields):
            wanted = ", ".join(self.fields) or "no fields"
            raise TypeError(f"{type_name} jobs are keyed by {wanted}; got {', '.join(given) or 'none'}.")


def _field_text(field: str, value: object, kind: str = "Dedupe key") -> str:
    # Integers and strings read the same in Python and after a SQL cast to text; a bool
    # ("True" against "true") or a float would not.
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidPayload(
            f"The {kind.lower()} field {field!r} must be an integer or a string, got {type(value).__name__}."
        )
    return str(value)
