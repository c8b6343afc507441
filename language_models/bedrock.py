"""Amazon Bedrock's Converse API through boto3 (``MODEL_PROVIDER=bedrock``).

Settings: ``BEDROCK_MODEL_ID``, ``BEDROCK_ENDPOINT_URL`` (empty: AWS's own), ``AWS_REGION``,
``MODEL_TIMEOUT`` (a total deadline for each call, however slowly Bedrock answers);
credentials come from boto3's usual chain (role, environment, profile). The signed request
goes out through the platform's bounded transport (``language_models.bedrock_http``): an
answer larger than ``HTTP_MAX_RESPONSE_BYTES`` once decoded is an invalid answer, stopped as
it streams. botocore does not retry here: the job engine retries, with its backoff.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import httpx
from django.conf import settings

from language_models import bedrock_http
from language_models.answers import Completion
from language_models.errors import (
    InvalidAnswer,
    ModelCallError,
    ModelError,
    ModelRejected,
    ModelTimeout,
    ModelUnavailable,
    rate_limited,
)
from language_models.prompts import Prompt
from language_models.transport import AnswerTooLarge

PROVIDER = "bedrock"
THROTTLED = {"ThrottlingException", "TooManyRequestsException"}
UNAVAILABLE = {
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelNotReadyException",
    "ModelErrorException",
}
REJECTED = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "ExpiredTokenException",
    "ValidationException",
    "ResourceNotFoundException",
}


@lru_cache(maxsize=4)
def _client(endpoint_url: str, region: str, timeout: float, max_bytes: int) -> Any:
    """A bedrock-runtime client: a total deadline of ``timeout`` seconds for each call, at
    most ``max_bytes`` of answer once decoded, no retries."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"total_max_attempts": 1, "mode": "standard"},  # one try: the job engine retries
    )
    client = boto3.client(
        "bedrock-runtime", region_name=region, endpoint_url=endpoint_url or None, config=config
    )
    return bedrock_http.bound(client, timeout, max_bytes)


def bedrock_client() -> Any:
    """The bedrock-runtime client of the current settings (one per process and settings)."""
    return _client(
        settings.BEDROCK_ENDPOINT_URL,
        settings.AWS_REGION,
        settings.MODEL_TIMEOUT,
        settings.HTTP_MAX_RESPONSE_BYTES,
    )


def complete(prompt: Prompt, text: str, max_tokens: int) -> Completion:
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    model_id = settings.BEDROCK_MODEL_ID
    try:
        response = bedrock_client().converse(
            modelId=model_id,
            system=[{"text": prompt.system}],
            messages=[{"role": "user", "content": [{"text": text}]}],
            inferenceConfig={"maxTokens": max_tokens, "temperature": 0.0},
        )
    except AnswerTooLarge as exc:
        raise InvalidAnswer(
            f"Bedrock answered with more than {exc.limit:,} bytes (HTTP_MAX_RESPONSE_BYTES)."
        ) from exc
    except httpx.DecodingError as exc:
        raise InvalidAnswer(f"Bedrock answered with something that cannot be read: {exc}") from exc
    except (httpx.TimeoutException, ReadTimeoutError, ConnectTimeoutError) as exc:
        raise ModelTimeout(f"The model call timed out after {settings.MODEL_TIMEOUT}s: {exc}.") from exc
    except (httpx.TransportError, EndpointConnectionError) as exc:
        raise ModelUnavailable(f"The model call failed: {exc}.") from exc
    except ClientError as exc:
        raise service_error(exc) from exc
    except BotoCoreError as exc:
        raise ModelCallError(f"The model call failed: {exc}.") from exc
    return read_response(response, model_id)


def service_error(exc: Any) -> ModelError:
    """The model error for an error Bedrock answered with (a botocore ``ClientError``)."""
    error = exc.response.get("Error", {})
    meta = exc.response.get("ResponseMetadata", {})
    code, status = error.get("Code", ""), meta.get("HTTPStatusCode") or 0
    if code in THROTTLED or status == 429:
        return rate_limited(PROVIDER, str(exc), retry_after(meta.get("HTTPHeaders", {})))
    if code == "ModelTimeoutException":
        return ModelTimeout(f"The model call timed out on Bedrock's side: {exc}.")
    if code in UNAVAILABLE or status >= 500:
        return ModelUnavailable(f"The model call failed: {exc}.")
    if code in REJECTED or status in (400, 401, 403, 404):
        return ModelRejected(
            f"The model call failed: {exc}. Check BEDROCK_MODEL_ID ({settings.BEDROCK_MODEL_ID}), "
            "AWS_REGION and the AWS credentials."
        )
    return ModelCallError(f"The model call failed: {exc}.")


def retry_after(headers: dict[str, str]) -> float | None:
    try:
        return max(0.0, float(headers["retry-after"]))
    except (KeyError, TypeError, ValueError):
        return None


def read_response(response: dict[str, Any], model_id: str) -> Completion:
    try:
        blocks = response["output"]["message"]["content"]
        text = "".join(block["text"] for block in blocks if "text" in block)
    except (KeyError, TypeError) as exc:
        raise InvalidAnswer(f"The model's response has no text answer: {exc!r}.") from None
    usage = response.get("usage") or {}
    return Completion(
        text=text,
        model=model_id,
        input_tokens=usage.get("inputTokens"),
        output_tokens=usage.get("outputTokens"),
        stop_reason=str(response.get("stopReason", "")),
    )
