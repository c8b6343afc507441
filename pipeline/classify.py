"""Classification into labels. Providers: ``local`` (deterministic keyword rules from
settings, the embedded default) and ``bedrock`` (Amazon Bedrock's Converse API, whose answer
must be JSON of the agreed shape ``{"labels": ["invoice", ...]}``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from pipeline.errors import ModelCallError

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
    if settings.MODEL_PROVIDER == "bedrock":
        return classify_bedrock(subject, text)
    return classify_local(subject, text)


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


# --- Bedrock ------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _client(endpoint_url: str, region: str, timeout: float) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"max_attempts": 1, "mode": "standard"},  # the job engine retries, with backoff
    )
    return boto3.client(
        "bedrock-runtime", region_name=region, endpoint_url=endpoint_url or None, config=config
    )


def bedrock_client() -> Any:
    return _client(settings.BEDROCK_ENDPOINT_URL, settings.AWS_REGION, settings.MODEL_TIMEOUT)


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


def classify_bedrock(subject: str, text: str, client: Any = None) -> Classification:
    from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError

    client = client or bedrock_client()
    model_id = settings.BEDROCK_MODEL_ID
    prompt = f"Subject: {subject}\n\n{text[:PROMPT_CHARS]}"
    try:
        response = client.converse(
            modelId=model_id,
            system=[{"text": SYSTEM_PROMPT}],
            messages=[{"role": "user", "content": [{"text": prompt}]}],
            inferenceConfig={"maxTokens": 200, "temperature": 0.0},
        )
    except (ReadTimeoutError, ConnectTimeoutError) as exc:
        raise ModelCallError(f"The model call timed out after {settings.MODEL_TIMEOUT}s: {exc}.") from exc
    except (BotoCoreError, ClientError) as exc:
        raise ModelCallError(f"The model call failed: {exc}.") from exc
    try:
        answer = "".join(
            block["text"] for block in response["output"]["message"]["content"] if "text" in block
        )
    except (KeyError, TypeError) as exc:
        raise ModelCallError(f"The model's response has no text answer: {exc!r}.") from None
    return Classification(labels=validate_answer(answer), model=model_id, raw_response=answer)
