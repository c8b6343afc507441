"""Classification into labels. With ``MODEL_PROVIDER=local`` (the embedded default), by
deterministic keyword rules from settings; otherwise by the configured model (Amazon
Bedrock or an OpenAI-compatible endpoint, through ``language_models``), whose answer must be
JSON of the agreed shape ``{"labels": ["invoice", ...]}``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

import language_models
from pipeline.errors import ModelCallError, ModelRateLimited

DEFAULT_RULES: dict[str, list[str]] = {
    "invoice": ["invoice", "rechnung", "payment due", "amount due", "receipt"],
    "support": ["help", "error", "problem", "not working", "support", "broken"],
    "newsletter": ["unsubscribe", "newsletter", "weekly digest"],
    "meeting": ["meeting", "agenda", "calendar", "termin", "schedule"],
    "shipping": ["shipment", "tracking number", "delivered", "lieferung"],
}
FALLBACK_LABEL = "other"
LABEL_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
MAX_LABELS = 10
PROMPT_CHARS = 8000

SYSTEM_PROMPT = (
    "You label emails. Answer with JSON only, exactly of the shape "
    '{"labels": ["label", ...]}: one to ten labels, each lowercase letters, digits, "-" or "_".'
)


@dataclass(frozen=True)
class Classification:
    labels: list[str]
    model: str
    raw_response: str


def classify(subject: str, text: str) -> Classification:
    """Labels for one email from the configured provider; ModelCallError when it fails."""
    if language_models.is_local():
        return classify_local(subject, text)
    return classify_with_model(subject, text)


# --- local rules --------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _rules(raw: str) -> dict[str, tuple[str, ...]]:
    if not raw:
        return {label: tuple(words) for label, words in DEFAULT_RULES.items()}
    try:
        rules = json.loads(raw)
        if not isinstance(rules, dict) or not all(
            isinstance(words, list) and all(isinstance(word, str) for word in words)
            for words in rules.values()
        ):
            raise ValueError("expected an object of label → list of keywords")
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"Setting PIPELINE_CLASSIFIER_RULES is not valid JSON rules: {exc}."
        ) from None
    return {str(label): tuple(word.lower() for word in words) for label, words in rules.items()}


def classify_local(subject: str, text: str) -> Classification:
    """Every label one of whose keywords occurs in the subject or text; else ``other``."""
    haystack = f"{subject}\n{text}".lower()
    rules = _rules(settings.PIPELINE_CLASSIFIER_RULES)
    labels = sorted(label for label, words in rules.items() if any(word in haystack for word in words))
    labels = labels or [FALLBACK_LABEL]
    return Classification(labels=labels, model="local-rules", raw_response=json.dumps({"labels": labels}))


# --- a model (Bedrock or an OpenAI-compatible endpoint, through language_models) ------------


def validate_answer(text: str) -> list[str]:
    """The model's answer as labels, or ModelCallError when it is not the agreed JSON."""
    try:
        answer = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ModelCallError(f"The model's answer is not JSON: {exc}.") from None
    labels = answer.get("labels") if isinstance(answer, dict) else None
    if not isinstance(labels, list) or not 1 <= len(labels) <= MAX_LABELS:
        raise ModelCallError(
            f'The model\'s answer is not {{"labels": [1 to {MAX_LABELS} labels]}}: {text[:200]!r}.'
        )
    if not all(isinstance(label, str) and LABEL_PATTERN.match(label) for label in labels):
        raise ModelCallError(f"The model's answer has invalid labels: {labels[:MAX_LABELS]!r}.")
    return sorted(set(labels))


def classify_with_model(subject: str, text: str) -> Classification:
    prompt = language_models.Prompt(
        task="email.classify",
        instruction=f"Subject: {subject}\n\n{text[:PROMPT_CHARS]}",
        system=SYSTEM_PROMPT,
        json=True,
        max_output_tokens=200,
    )
    try:
        answer = language_models.complete(prompt)
    except language_models.ModelError as exc:
        raise _as_pipeline_error(exc) from exc
    return Classification(labels=validate_answer(answer.text), model=answer.model, raw_response=answer.text)


def _as_pipeline_error(exc: language_models.ModelError) -> ModelCallError:
    """The pipeline records its own classes; every model failure is retried, as it always was."""
    if isinstance(exc, language_models.ModelRateLimited):
        return ModelRateLimited(str(exc), retry_after=exc.retry_after)
    return ModelCallError(str(exc))
