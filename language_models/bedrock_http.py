"""Bedrock's HTTP through the platform's one bounded transport (``language_models.transport``).

botocore sends with urllib3 on its own: its timeouts apply to each read, so a service
dripping a byte a second holds a call for as long as it likes, and it reads Converse
answers and every error answer whole, however large. ``bound`` hooks a Bedrock client's
``before-send`` event, where botocore lets a handler answer the signed request itself
(``botocore.endpoint.Endpoint._do_get_response``): the request goes out through
``BoundedTransport``, with a total deadline and at most ``max_bytes`` of answer counted as it
is decoded, and comes back to botocore as an ``AWSResponse`` that it parses as its own. A
ThrottlingException, a 5xx or a refusal is then botocore's ``ClientError`` as ever.

The transport's own failures (``AnswerTooLarge``, ``DeadlinePassed``, a refused connection:
``httpx.TransportError``s) pass through botocore as they are; the caller turns them into
model errors. The answer is read whole here, within the deadline, before botocore sees it:
an event stream (ConverseStream) would arrive all at once, which the platform does not use.

botocore's Stubber answers at ``before-call``, before anything is sent: a stubbed client
never gets here.
"""

from __future__ import annotations

import io
import ssl
from typing import Any
from urllib.parse import urlsplit

import httpx

from language_models.transport import BoundedTransport


def bound(client: Any, deadline: float, max_bytes: int) -> Any:
    """``client`` (a boto3 ``bedrock-runtime`` client) sending through the bounded transport."""
    sender = _Sender(client.meta.endpoint_url, deadline, max_bytes)
    client.meta.events.register(f"before-send.{client.meta.service_model.service_id.hyphenize()}", sender)
    return client


class _Sender:
    def __init__(self, endpoint_url: str, deadline: float, max_bytes: int) -> None:
        from botocore.session import get_session
        from botocore.utils import get_environ_proxies

        # What botocore's own sender would use: HTTP(S)_PROXY and NO_PROXY, AWS_CA_BUNDLE.
        proxy = get_environ_proxies(endpoint_url).get(urlsplit(endpoint_url).scheme)
        ca_bundle = get_session().get_config_variable("ca_bundle")
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True
        inner = httpx.HTTPTransport(proxy=proxy or None, verify=verify)
        self.client = httpx.Client(
            transport=BoundedTransport(deadline, max_bytes, inner=inner),
            timeout=deadline,
            follow_redirects=False,  # as botocore: a signed request goes where it was signed for
        )

    def __call__(self, request: Any, **kwargs: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        body = request.body
        if hasattr(body, "read"):
            body = body.read()
        response = self.client.request(
            request.method,
            request.url,
            headers=list(request.headers.items()),
            content=body.encode() if isinstance(body, str) else body,
        )
        return AWSResponse(request.url, response.status_code, dict(response.headers), _Read(response.content))


class _Read(io.BytesIO):
    """An answer already read, as botocore reads a urllib3 answer (``stream`` and ``read``)."""

    def stream(self, amt: int = 1024 * 1024, decode_content: bool | None = None) -> Any:
        while chunk := self.read(amt):
            yield chunk
