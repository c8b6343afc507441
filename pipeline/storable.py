"""Text that PostgreSQL can store, from strings that came out of an email.

Header values, file names, decoded bodies and error messages can hold NUL characters (an
encoded word ``=?utf-8?q?=00?=``) and lone surrogates (bytes the parser could not decode,
or an ``unicode_escape`` word): a text column refuses the first, the driver cannot encode
the second, and either would fail the whole statement. Every such string passes through
``text`` on its way to the database.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def text(value: str) -> str:
    """``value`` without NUL characters, each lone surrogate replaced by U+FFFD."""
    if value.isascii():
        return value.replace("\x00", "")
    try:
        # Undecodable bytes come back from the parser as the escapes U+DC80–U+DCFF: turned
        # back into those bytes, what is valid UTF-8 among them reads as what it is.
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # other surrogates: no bytes behind them
        value = _SURROGATE.sub("\ufffd", value)
    return value.replace("\x00", "")
