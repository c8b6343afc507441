"""The PostgreSQL driver's statements, as text: each fits the length below which psycopg
caches the conversion of its named parameters (a longer statement is parsed again at every
execution, on the hot path of every claim)."""

from __future__ import annotations

from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from jobs.drivers import postgres


def _statements() -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in vars(postgres).items():
        if not name.isupper():
            continue
        texts = value.items() if isinstance(value, dict) else [("", value)]
        for form, text in texts:
            if isinstance(text, str) and "%(" in text:
                found[f"{name}{form or ''}"] = text
    return found


def test_every_statement_with_named_parameters_fits_psycopgs_cached_length():
    statements = _statements()
    assert "FLOW_TAKE_SPARED(True, True)" in statements  # the longest, and the hot one
    too_long = {
        name: len(text.encode())
        for name, text in statements.items()
        if len(text.encode()) > MAX_CACHED_STATEMENT_LENGTH
    }
    assert not too_long, f"longer than psycopg caches ({MAX_CACHED_STATEMENT_LENGTH} bytes): {too_long}"
