"""Servers that misbehave on purpose."""

from __future__ import annotations

import functools
import socket
import threading


class SilentServer:
    """A TCP server that accepts connections and never answers: a model endpoint that hangs.

    ``accepted`` holds every connection it took, so a test can tell a timeout that reached
    the server from one that never left the client."""

    def __init__(self) -> None:
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self._server.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                self.accepted.append(self._server.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self.accepted:
            conn.close()
        self._server.close()


class DrippingServer(SilentServer):
    """An HTTP server that answers 200 with its headers at once, then drips its body a byte
    every ``interval`` seconds, for ever: a read timeout never trips."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        super().__init__()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._server.accept()[0]
            except OSError:
                continue
            self.accepted.append(conn)
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            )
            while not self._stop.wait(self.interval):
                conn.sendall(b" ")
        except OSError:
            pass


class FloodingServer(SilentServer):
    """An HTTP server that answers ``status`` with a body of ``size`` bytes (``{"output": ``
    and then spaces), sent as fast as the client takes it, without a Content-Length: an
    answer too large to hold, that ends when the connection does.

    ``cut`` is set when the client hung up before the whole body was sent: it stopped
    reading."""

    def __init__(self, status: int = 200, size: int = 64 * 1024 * 1024) -> None:
        self.status, self.size = status, size
        self.cut = threading.Event()
        super().__init__()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._server.accept()[0]
            except OSError:
                continue
            self.accepted.append(conn)
            threading.Thread(target=self._flood, args=(conn,), daemon=True).start()

    def _flood(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            conn.sendall(
                f"HTTP/1.1 {self.status} Flood\r\nContent-Type: application/json\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            conn.sendall(b'{"output": ')
            piece = b" " * (64 * 1024)
            for _ in range(self.size // len(piece)):
                conn.sendall(piece)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            self.cut.set()


def closed_port_url() -> str:
    """An http:// URL of a port nothing listens on (bound, then closed)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


@functools.cache
def gzip_bomb(decoded_bytes: int, layers: int = 2) -> bytes:
    """``decoded_bytes`` of zeros gzipped ``layers`` times: an answer of a few kilobytes
    (``Content-Encoding: gzip, gzip``) that inflates to ``decoded_bytes``. Built a
    megabyte at a time, so making it takes no memory to speak of; built once a process (a
    few seconds for 200 MB), for every test that sends one."""
    import zlib

    encoder = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1024 * 1024)
    parts = [encoder.compress(block) for _ in range(decoded_bytes // len(block))]
    body = b"".join([*parts, encoder.compress(bytes(decoded_bytes % len(block))), encoder.flush()])
    for _ in range(layers - 1):
        encoder = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        body = encoder.compress(body) + encoder.flush()
    return body
