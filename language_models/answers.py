"""What a model call gives back, and how an answer is bounded and read as JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from language_models.errors import InvalidAnswer

LOCAL = "local"
# A token is rarely longer than this many characters: an answer longer than its token
# budget allows did not come from a well-behaved model, and is cut there.
CHARS_PER_TOKEN = 8
FENCE = re.compile(r"^```(?:json)?\s*\n(?P<body>.*)\n```$", re.DOTALL)


@dataclass(frozen=True)
class Completion:
    """A provider's raw result, before the common checks."""

    text: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str = ""


@dataclass(frozen=True)
class Answer:
    """The answer with what to record about it: which provider and model wrote it, the
    tokens it cost (None where the provider is not a model) and how long it took."""

    text: str
    provider: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    truncated: bool = False
    prompt: str = ""  # the user message as sent (rendered and bounded), for the artifact

    @property
    def written_by_model(self) -> bool:
        return self.provider != LOCAL

    def record(self) -> dict[str, Any]:
        """The fields an artifact keeps about the call (``AIArtifact`` has one of each)."""
        return {
            "provider": self.provider,
            "model": self.model[:100],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": self.latency_ms,
        }


def bound(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def parse_json(text: str) -> dict[str, Any]:
    """The answer as a JSON object; InvalidAnswer when it is anything else.

    A single Markdown code fence around the object is tolerated: models add one even when
    asked not to, and it changes nothing about the content.
    """
    body = text.strip()
    fenced = FENCE.match(body)
    if fenced:
        body = fenced.group("body")
    try:
        value = json.loads(body)
    except ValueError as exc:
        raise InvalidAnswer(f"The model's answer is not JSON: {exc}; it began {text[:120]!r}.") from None
    if not isinstance(value, dict):
        raise InvalidAnswer(f"The model's answer is JSON but not an object: {text[:120]!r}.")
    return value
