"""The text-generator interface the AI jobs call, and its deterministic local default.

Production points ``WORKSPACES_AI_GENERATOR`` at a class wrapping a hosted model; the
default needs no network and gives the same text for the same prompt, so tests and the
demo can assert on it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string


@dataclass(frozen=True)
class Generation:
    text: str
    model: str


class TextGenerator(Protocol):
    def generate(self, prompt: str, *, task: str) -> Generation: ...


class LocalGenerator:
    """Turns the prompt's fact lines (``- …``) into a titled digest: deterministic, offline."""

    model = "local-digest-1"
    max_points = 8

    def generate(self, prompt: str, *, task: str) -> Generation:
        facts = [line.strip()[2:] for line in prompt.splitlines() if line.strip().startswith("- ")]
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        title = task.replace("_", " ").replace(".", " ").capitalize()
        points = facts[: self.max_points] or ["Nothing to report."]
        text = "\n".join([f"{title} [{digest}]", *(f"* {point}" for point in points)])
        return Generation(text=text, model=self.model)


def get_generator() -> TextGenerator:
    path = getattr(settings, "WORKSPACES_AI_GENERATOR", "workspaces.ai.generator.LocalGenerator")
    return import_string(path)()
