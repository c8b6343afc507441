"""The one httpx transport for every outside service the platform calls: the providers'
APIs (``workspaces/providers/http.py``), OpenAI-compatible models and embeddings, Qdrant,
Amazon Bedrock (its signed requests, from botocore: ``language_models/bedrock_http.py``).
It gives each call a total deadline and bounds the answer's size after decoding.

**A total deadline.** httpx's timeouts apply to each read: a server that drips a byte every
second never trips a 10-second read timeout and holds the call for as long as it likes.
Through this transport a call ends with ``DeadlinePassed`` (an ``httpx.ReadTimeout``) once ``deadline`` seconds
have passed since the request left, whatever arrives in between (at the latest one read
timeout later: a read already waiting is not interrupted). Every phase's own timeout is at
most the deadline. Headers dripped byte by byte are bounded by the read timeout of each byte
and the header size limit of the HTTP parser only.

**Answers measured after decoding.** httpx decodes ``Content-Encoding`` a whole chunk at a
time: a 1,827-byte answer of ``gzip, gzip`` inflates to over a gigabyte inside one call,
before any limit can look at it. Here the answer is decoded by the transport itself, each
layer in pieces of at most ``PIECE`` bytes (zlib's ``max_length``), and the decoded bytes are
counted as they stream: past ``max_bytes`` the call ends with ``AnswerTooLarge``, having
held at most a few pieces. httpx then sees an answer without ``Content-Encoding``. The
request asks for ``gzip`` and ``deflate`` only, and an answer in another encoding (``br``,
``zstd``, made up) is a ``httpx.DecodingError`` rather than bytes nobody can read.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from itertools import chain

import httpx

PHASES = ("connect", "read", "write", "pool")
PIECE = 64 * 1024
ENCODINGS = {"gzip", "x-gzip", "deflate", "identity"}


class AnswerTooLarge(httpx.DecodingError):
    """The answer, decoded, is larger than the transport's ``max_bytes``."""

    def __init__(self, limit: int, request: httpx.Request) -> None:
        self.limit = limit
        super().__init__(f"The answer is larger than {limit:,} bytes once decoded.", request=request)


class DeadlinePassed(httpx.ReadTimeout):
    """The answer did not arrive whole within the transport's deadline."""


class BoundedTransport(httpx.BaseTransport):
    """``inner`` (a plain ``httpx.HTTPTransport`` by default) with a total ``deadline`` in
    seconds for each call and, when given, at most ``max_bytes`` of decoded answer."""

    def __init__(
        self, deadline: float, max_bytes: int | None = None, inner: httpx.BaseTransport | None = None
    ) -> None:
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.deadline
        given = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            phase: min(given.get(phase) or self.deadline, self.deadline) for phase in PHASES
        }
        request.headers["Accept-Encoding"] = "gzip, deflate"
        response = self.inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        layers = [
            name.strip().lower()
            for name in response.headers.get("content-encoding", "").split(",")
            if name.strip().lower() not in ("", "identity")
        ]
        headers = [
            (name, value)
            for name, value in response.headers.raw
            if not (name.lower() == b"content-encoding" or (layers and name.lower() == b"content-length"))
        ]
        declared = response.headers.get("content-length", "")
        stream = _BoundedStream(
            response.stream,
            request,
            deadline=deadline,
            seconds=self.deadline,
            max_bytes=self.max_bytes,
            layers=layers,
            declared=int(declared) if declared.isascii() and declared.isdigit() and not layers else None,
        )
        return httpx.Response(
            response.status_code, headers=headers, stream=stream, extensions=response.extensions
        )

    def close(self) -> None:
        self.inner.close()


class _BoundedStream(httpx.SyncByteStream):
    def __init__(
        self,
        stream: httpx.SyncByteStream,
        request: httpx.Request,
        *,
        deadline: float,
        seconds: float,
        max_bytes: int | None,
        layers: list[str],
        declared: int | None,
    ) -> None:
        self.stream, self.request = stream, request
        self.deadline, self.seconds, self.max_bytes = deadline, seconds, max_bytes
        self.layers, self.declared = layers, declared

    def __iter__(self) -> Iterator[bytes]:
        unknown = [name for name in self.layers if name not in ENCODINGS]
        if unknown:
            raise httpx.DecodingError(
                f"The answer is in an encoding this client does not read ({', '.join(unknown)}).",
                request=self.request,
            )
        if self.max_bytes is not None and self.declared is not None and self.declared > self.max_bytes:
            raise AnswerTooLarge(self.max_bytes, self.request)
        # The server applied the layers in the order named: they come off in reverse.
        layers = [_Layer(name, self.request) for name in reversed(self.layers)]
        size = 0
        for pieces in chain((self._timely(chunk, layers) for chunk in self.stream), [_finished(layers)]):
            for piece in pieces:
                size += len(piece)
                if self.max_bytes is not None and size > self.max_bytes:
                    raise AnswerTooLarge(self.max_bytes, self.request)
                yield piece

    def _timely(self, chunk: bytes, layers: list[_Layer]) -> Iterator[bytes]:
        if time.monotonic() > self.deadline:
            raise DeadlinePassed(
                f"The answer did not arrive whole within {self.seconds:g}s.", request=self.request
            )
        return _decoded(chunk, layers)

    def close(self) -> None:
        self.stream.close()


class _Layer:
    """One ``Content-Encoding`` layer, decoded in pieces of at most ``PIECE`` bytes."""

    def __init__(self, name: str, request: httpx.Request) -> None:
        self.name, self.request = name, request
        gzip = name in ("gzip", "x-gzip")
        self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self.started = False

    def pieces(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self.decoder.decompress(data, PIECE)
            except zlib.error as exc:
                if self.started or self.name != "deflate":
                    raise httpx.DecodingError(
                        f"The answer's {self.name} is broken: {exc}.", request=self.request
                    ) from None
                # "deflate" sent raw, without its zlib header, as some servers do.
                self.decoder = zlib.decompressobj(-zlib.MAX_WBITS)
                self.started = True
                continue
            self.started = True
            data = self.decoder.unconsumed_tail
            if piece:
                yield piece

    def rest(self) -> bytes:
        return self.decoder.flush()


def _decoded(data: bytes, layers: list[_Layer]) -> Iterator[bytes]:
    """``data`` through every layer (outermost first), a piece at a time."""
    if not layers:
        if data:
            yield data
        return
    for piece in layers[0].pieces(data):
        yield from _decoded(piece, layers[1:])


def _finished(layers: list[_Layer]) -> Iterator[bytes]:
    """What each layer still holds once the answer has ended, through the layers below it."""
    for index, layer in enumerate(layers):
        yield from _decoded(layer.rest(), layers[index + 1 :])
