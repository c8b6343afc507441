"""A total deadline for an HTTP call over httpx, however slowly the server answers.

httpx's timeouts apply to each read: a server that drips a byte every second never trips
a 10-second read timeout and holds the call for as long as it likes. Through this transport
a call ends with ``httpx.ReadTimeout`` once ``seconds`` have passed since the request left,
whatever arrives in between (at the latest one read timeout later: a read already waiting
is not interrupted). It counts the answer's body as it streams; headers dripped byte by
byte are bounded by the read timeout of each byte only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx

PHASES = ("connect", "read", "write", "pool")


class DeadlineTransport(httpx.BaseTransport):
    def __init__(self, seconds: float, inner: httpx.BaseTransport | None = None) -> None:
        self.seconds = seconds
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        given = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            phase: min(given.get(phase) or self.seconds, self.seconds) for phase in PHASES
        }
        response = self.inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _DeadlineStream(response.stream, deadline, self.seconds, request)
        return response

    def close(self) -> None:
        self.inner.close()


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(
        self, stream: httpx.SyncByteStream, deadline: float, seconds: float, request: httpx.Request
    ) -> None:
        self.stream, self.deadline, self.seconds, self.request = stream, deadline, seconds, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.stream:
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout(
                    f"The answer did not arrive whole within {self.seconds:g}s.", request=self.request
                )
            yield chunk

    def close(self) -> None:
        self.stream.close()
