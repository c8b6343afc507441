"""One HTTP convention for every provider (code host, work trackers), over httpx.

What an answer means for the job that asked, the same for every provider:

| answer | outcome |
|---|---|
| 2xx with JSON | the data |
| 304 to a conditional request (``If-None-Match``) | "not modified": nothing to do, and GitHub counts no rate limit |
| 429, or ``X-RateLimit-Remaining: 0``, or ``Retry-After`` on a 403 | ``jobs.RetryLater`` at the time the host names: the job waits without using an attempt |
| 5xx, a timeout, a connection that fails | ``ProviderUnavailable``: a failed try, retried after the job's backoff |
| 401, 403 | ``ProviderRefused`` naming the subject (repository, connection): fails at once |
| another 4xx | ``ProviderRefused`` with the host's message: fails at once |
| JSON that does not parse, an answer over ``HTTP_MAX_RESPONSE_BYTES`` (counted once decoded) | ``ProviderAnswerInvalid``: a failed try with a clear message |
| an answer that has not arrived whole ``HTTP_DEADLINE`` seconds after the request left | ``ProviderUnavailable``, like a timeout |

Pages are followed through ``Link: <…>; rel="next"`` headers, only to the host the client
was made for (a credential is never sent elsewhere), and at most ``max_pages`` of them.
Providers that page otherwise (a token or page number in the answer, a GraphQL cursor) call
``get`` or ``post`` once a page. No error message repeats one of the client's ``secrets``,
even when the host echoes it back.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from django.conf import settings

from jobs import RetryLater
from language_models.transport import AnswerTooLarge, BoundedTransport, DeadlinePassed
from workspaces.errors import ProviderAnswerInvalid, ProviderRefused, ProviderUnavailable

logger = logging.getLogger("workspaces.http")

# Waiting longer than this for a rate limit is not waiting but a configuration problem.
MAX_WAIT = timedelta(hours=6)
ASCII_DIGITS = re.compile(r"[0-9]{1,30}")


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    data: Any = None  # parsed JSON; None for a 304
    next_url: str = ""  # the Link header's rel="next", if any

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    @property
    def etag(self) -> str:
        return self.headers.get("etag", "")


@dataclass
class HttpClient:
    """A provider's HTTP client: a base URL, its headers (credentials), and the convention.

    ``subject`` names what the calls are for in every error ("repository acme/api",
    "connection Jira: Payments"); ``host_name`` names the provider ("GitHub").
    """

    base_url: str
    subject: str
    host_name: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    max_bytes: int | None = None
    max_pages: int = 1000
    transport: httpx.BaseTransport | None = None
    # The credentials in ``headers`` (a token, its Basic encoding): blanked out of every error.
    secrets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._limit = self.max_bytes or settings.HTTP_MAX_RESPONSE_BYTES
        self._client = httpx.Client(
            headers=dict(self.headers),
            timeout=self.timeout or settings.HTTP_TIMEOUT,
            # A total deadline per call, and the answer counted as it is decoded.
            transport=BoundedTransport(settings.HTTP_DEADLINE, self._limit, inner=self.transport),
            follow_redirects=False,  # a redirect could carry the credential to another host
        )
        self._origin = _origin(self.base_url)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, *, params: Mapping[str, Any] | None = None, etag: str = "") -> Answer:
        """GET ``path`` (relative to the base URL, or a full URL of the same host)."""
        headers = {"If-None-Match": etag} if etag else {}
        return self._send("GET", path, params=params, headers=headers)

    def post(self, path: str, *, json: Any) -> Answer:
        """POST ``json`` to ``path`` (a GraphQL query, a search): the same convention as ``get``."""
        return self._send("POST", path, json=json)

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> Answer:
        if not path:
            url = self.base_url
        elif "://" in path:
            url = path
        else:
            url = urljoin(self.base_url.rstrip("/") + "/", path.lstrip("/"))
        if _origin(url) != self._origin:
            raise ProviderAnswerInvalid(f"{self.host_name} pointed {self.subject} at another host: {url}.")
        try:
            with self._client.stream(method, url, params=params, headers=headers, json=json) as response:
                body = self._read(response)
        except AnswerTooLarge:
            raise ProviderAnswerInvalid(self._too_large(self._limit)) from None
        except httpx.DecodingError as exc:
            raise ProviderAnswerInvalid(
                f"{self.host_name} answered {self.subject} with an answer that cannot be read: {exc}"
            ) from None
        except DeadlinePassed:
            raise ProviderUnavailable(
                f"{self.host_name} did not answer {self.subject} in whole within "
                f"{settings.HTTP_DEADLINE:g}s (HTTP_DEADLINE)."
            ) from None
        except httpx.TimeoutException:
            raise ProviderUnavailable(
                f"{self.host_name} did not answer within {self._client.timeout.read}s for {self.subject}."
            ) from None
        except httpx.TransportError as exc:
            raise ProviderUnavailable(
                self.redact(f"{self.host_name} could not be reached for {self.subject}: {exc}.")
            ) from None
        return self._interpret(response, body)

    def redact(self, text: str) -> str:
        """``text`` with each of the client's secrets blanked out."""
        for secret in self.secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return text

    def pages(
        self, path: str, *, params: Mapping[str, Any] | None = None, etag: str = ""
    ) -> Iterator[Answer]:
        """The first page (conditional on ``etag``), then every ``rel="next"`` page."""
        answer = self.get(path, params=params, etag=etag)
        yield answer
        for _ in range(self.max_pages - 1):
            if answer.not_modified or not answer.next_url:
                return
            answer = self.get(answer.next_url)
            yield answer
        if answer.next_url:
            raise ProviderAnswerInvalid(
                f"{self.host_name} has more than {self.max_pages} pages for {self.subject}."
            )

    def _read(self, response: httpx.Response) -> bytes:
        # The transport stops the answer past the limit, counted after decoding.
        return b"".join(response.iter_bytes())

    def _too_large(self, limit: int) -> str:
        return f"{self.host_name} answered {self.subject} with more than {limit:,} bytes (HTTP_MAX_RESPONSE_BYTES)."

    def _interpret(self, response: httpx.Response, body: bytes) -> Answer:
        status = response.status_code
        headers = response.headers
        wait_until = rate_limited_until(status, headers)
        if wait_until is not None:
            raise RetryLater(
                f"{self.host_name} rate limit for {self.subject}; resumes at {wait_until:%H:%M:%S} UTC.",
                at=wait_until,
            )
        if status == 304:
            return Answer(status, headers)
        if status >= 500:
            raise ProviderUnavailable(f"{self.host_name} answered {status} for {self.subject}.")
        if status in (401, 403):
            raise ProviderRefused(
                self.redact(
                    f"{self.host_name} refused the credentials for {self.subject} "
                    f"({status}: {_message(body)}). Check the token's access."
                )
            )
        if status >= 400:
            raise ProviderRefused(
                self.redact(f"{self.host_name} answered {status} for {self.subject}: {_message(body)}.")
            )
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise ProviderAnswerInvalid(
                self.redact(
                    f"{self.host_name} answered {self.subject} with malformed JSON ({exc}): {body[:80]!r}."
                )
            ) from None
        next_url = response.links.get("next", {}).get("url", "")
        return Answer(status, headers, data, next_url)


def rate_limited_until(
    status: int, headers: Mapping[str, str], now: datetime | None = None
) -> datetime | None:
    """When a rate-limited request may be made again, or None when it was not rate-limited.

    GitHub: a 403 or 429 with ``X-RateLimit-Remaining: 0`` waits for ``X-RateLimit-Reset``
    (epoch seconds); a secondary limit sends ``Retry-After`` (seconds or an HTTP date).
    Whatever the headers hold (``²``, an epoch in the year 30,000, a date that is not one),
    the answer is a time within ``MAX_WAIT``, never an exception.
    """
    now = now or datetime.now(UTC)
    if status not in (403, 429):
        return None
    retry_after = headers.get("retry-after", "").strip()
    reset = headers.get("x-ratelimit-reset", "").strip()
    latest = now + MAX_WAIT
    if retry_after:
        seconds = _seconds(retry_after)
        until = now + timedelta(seconds=seconds) if seconds is not None else _http_date(retry_after)
        until = until or now + timedelta(seconds=60)
    elif headers.get("x-ratelimit-remaining", "").strip() == "0" and ASCII_DIGITS.fullmatch(reset):
        epoch = min(int(reset), int(latest.timestamp()))  # the year 30,000 is not a datetime
        until = datetime.fromtimestamp(epoch, UTC) + timedelta(seconds=1)
    elif status == 429:
        until = now + timedelta(seconds=60)  # rate-limited without saying until when
    else:
        return None
    return min(max(until, now), latest)


def _seconds(value: str) -> float | None:
    """A delay in seconds written in ASCII digits (``"²".isdigit()`` is true, ``int("²")``
    fails), at most ``MAX_WAIT``; None for anything else."""
    if not ASCII_DIGITS.fullmatch(value):
        return None
    return min(float(value), MAX_WAIT.total_seconds())


def _http_date(value: str) -> datetime | None:
    """An HTTP date with its time zone; None when ``value`` is not one."""
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return parsed if parsed is not None and parsed.tzinfo is not None else None


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def _message(body: bytes) -> str:
    """The host's own words, when it gave some (GitHub: {"message": ...})."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200].decode("utf-8", "replace").strip() or "no message"
    if isinstance(data, dict):
        # GitHub {"message"}, Jira {"errorMessages": [...]}, ClickUp {"err"}, GraphQL {"errors": [{"message"}]}.
        for words in (data.get("message"), data.get("err"), *_listed(data.get("errorMessages"))):
            if isinstance(words, str) and words:
                return words[:200]
        for error in _listed(data.get("errors")):
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                return error["message"][:200]
    return "no message"


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
