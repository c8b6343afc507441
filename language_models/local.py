"""The embedded default: an extractive digest of a prompt's facts, written by no model.

It quotes the first facts of the prompt under a title that says plainly that no model
wrote it, so nobody mistakes it for an interpretation. The same prompt always gives the
same digest (tests and the demo rely on it), and it needs no network and no key.
"""

from __future__ import annotations

from language_models.answers import Completion
from language_models.prompts import Prompt, one_line

MODEL = "local-digest"
LABEL = "no model wrote this; an extractive digest of the recorded facts (MODEL_PROVIDER=local)"
MAX_POINTS = 12


def title(task: str) -> str:
    return task.replace("_", " ").replace(".", " ").capitalize()


def digest(prompt: Prompt) -> str:
    points = [one_line(fact) for fact in prompt.facts[:MAX_POINTS]] or ["Nothing was recorded to report."]
    lines = [f"{title(prompt.task)}: {LABEL}.", *(f"* {point}" for point in points)]
    if len(prompt.facts) > MAX_POINTS:
        lines.append(f"* … and {len(prompt.facts) - MAX_POINTS} more facts.")
    return "\n".join(lines)


def complete(prompt: Prompt) -> Completion:
    return Completion(text=digest(prompt), model=MODEL)
