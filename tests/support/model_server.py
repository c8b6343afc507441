"""A local HTTP server that answers like a model service: OpenAI's Chat Completions API
(``POST /v1/chat/completions``), its Embeddings API (``POST /v1/embeddings``) and Amazon
Bedrock's Converse API (``POST /model/{model id}/converse``) and InvokeModel for its
embedding models (``POST /model/{model id}/invoke``: Titan's one text, Cohere's batch).

Tests script its replies: a text answer (rendered in the shape of the API the request
used, with token usage), an HTTP error with headers (a 429 with ``Retry-After``), a raw
body (an answer that is not JSON), or no answer at all (a model that hangs). Every request
is kept, so a test can read the prompt that was sent.
"""

from __future__ import annotations

import json
import random
import threading
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    data: bytes = b""  # the body as it came

    @property
    def system(self) -> str:
        if "messages" in self.body and "modelId" not in self.body:
            return next((m["content"] for m in self.body["messages"] if m["role"] == "system"), "")
        return " ".join(block["text"] for block in self.body.get("system", []))

    @property
    def prompt(self) -> str:
        """The user message, from either API."""
        for message in self.body.get("messages", []):
            if message["role"] == "user":
                content = message["content"]
                return content if isinstance(content, str) else "".join(b["text"] for b in content)
        return ""

    @property
    def wants_json(self) -> bool:
        return "response_format" in self.body or "JSON" in self.system


@dataclass(frozen=True)
class Reply:
    status: int = 200
    text: str | None = None  # an answer, rendered as the API the request used
    raw: bytes | None = None  # or these exact bytes
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    dimensions: int = 8  # of an embeddings answer's vectors
    input_tokens: int = 42
    output_tokens: int = 17

    @classmethod
    def answer(cls, text: str, *, input_tokens: int = 42, output_tokens: int = 17) -> Reply:
        return cls(text=text, input_tokens=input_tokens, output_tokens=output_tokens)

    @classmethod
    def error(cls, status: int, message: str = "error", **headers: str) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "error", "code": str(status)}})
        return cls(
            status=status, raw=body.encode(), headers={k.replace("_", "-"): v for k, v in headers.items()}
        )

    @classmethod
    def body(cls, raw: bytes, status: int = 200) -> Reply:
        return cls(status=status, raw=raw)

    @classmethod
    def vectors(cls, dimensions: int = 8) -> Reply:
        """An embeddings answer: one vector of ``dimensions`` per input text."""
        return cls(dimensions=dimensions)

    @classmethod
    def never(cls) -> Reply:
        return cls(hang=True)


def embedding(text: str, dimensions: int) -> list[float]:
    """The stand-in's vector of a text: the same text, the same vector."""
    rng = random.Random(zlib.crc32(text.encode()))
    return [rng.uniform(-1, 1) for _ in range(dimensions)]


def _render(request: Received, reply: Reply) -> bytes:
    if request.path.endswith("/embeddings"):
        texts = request.body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        return json.dumps(
            {
                "object": "list",
                "data": [
                    {"object": "embedding", "index": n, "embedding": embedding(text, reply.dimensions)}
                    for n, text in enumerate(texts)
                ],
                "model": request.body.get("model", "test-embedding"),
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        ).encode()
    if request.path.endswith("/invoke"):
        if "texts" in request.body:  # Cohere Embed
            texts = request.body["texts"]
            return json.dumps(
                {
                    "id": "test",
                    "texts": texts,
                    "embeddings": [embedding(text, reply.dimensions) for text in texts],
                    "response_type": "embeddings_floats",
                }
            ).encode()
        text = request.body.get("inputText", "")  # Titan Text Embeddings
        return json.dumps(
            {"embedding": embedding(text, reply.dimensions), "inputTextTokenCount": len(text.split())}
        ).encode()
    if request.path.endswith("/converse"):
        return json.dumps(
            {
                "output": {"message": {"role": "assistant", "content": [{"text": reply.text}]}},
                "stopReason": "end_turn",
                "usage": {
                    "inputTokens": reply.input_tokens,
                    "outputTokens": reply.output_tokens,
                    "totalTokens": reply.input_tokens + reply.output_tokens,
                },
                "metrics": {"latencyMs": 5},
            }
        ).encode()
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.input_tokens,
                "completion_tokens": reply.output_tokens,
                "total_tokens": reply.input_tokens + reply.output_tokens,
            },
        }
    ).encode()


class ModelServer:
    """Scripted replies are served in order; when none is left, ``responder`` decides
    (by default a 500 saying nothing was scripted, so a stray call fails loudly)."""

    def __init__(self, responder: Callable[[Received], Reply] | None = None) -> None:
        self.received: list[Received] = []
        self.replies: deque[Reply] = deque()
        self.responder = responder
        self.closing = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                request = Received(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"), raw
                )
                reply = server._next(request)
                if reply.hang:
                    server.closing.wait()
                    return
                data = reply.raw if reply.raw is not None else _render(request, reply)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            # Another API's client (Qdrant's) asks with every method: the same replies.
            do_GET = do_PUT = do_DELETE = do_POST  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.openai_url = f"{self.url}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def _next(self, request: Received) -> Reply:
        with self._lock:
            self.received.append(request)
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(request)
        return Reply.error(500, "no reply scripted for this request")

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
