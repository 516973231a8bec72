"""Servers that stall, on 127.0.0.1: memflow as a user meets it on a bad day.

`hung_server()` accepts every connection, reads the request and never
answers. `holding_proxy()` stands in front of a real `memflow serve` and
holds the first request whose path matches until the client gives up on it,
passing every other request through. Each records, per connection, when the
client opened and closed it (time.monotonic()), so a test can say what was
still waiting when something else happened — an order, never a duration.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

# Only turns a client that never gives up into an end; no test waits for it.
HOLD_GUARD_SECONDS = 120


@dataclass
class Held:
    request_line: str
    opened: float
    closed: float | None = None

    @property
    def path(self) -> str:
        parts = self.request_line.split()
        return parts[1] if len(parts) > 1 else ""


@dataclass
class Stalling:
    url: str = ""
    held: list[Held] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self) -> list[Held]:
        with self.lock:
            return list(self.held)


def _hold(connection: socket.socket, entry: Held, stop: threading.Event) -> None:
    """Keep the connection open, answering nothing, until the client closes it."""
    deadline = time.monotonic() + HOLD_GUARD_SECONDS
    while not stop.is_set() and time.monotonic() < deadline:
        readable, _, _ = select.select([connection], [], [], 0.2)
        if readable:
            try:
                if not connection.recv(65536):
                    break
            except OSError:
                break
    entry.closed = time.monotonic()


@contextmanager
def hung_server() -> Iterator[Stalling]:
    stalling = Stalling()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stalling.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(5)
            try:
                first = connection.recv(65536).decode("latin-1")
            except OSError:
                first = ""
            entry = Held(request_line=first.split("\r\n", 1)[0], opened=time.monotonic())
            with stalling.lock:
                stalling.held.append(entry)
            threading.Thread(target=_hold, args=(connection, entry, stop), daemon=True).start()

    thread = threading.Thread(target=serve, name="hung-server", daemon=True)
    thread.start()
    try:
        yield stalling
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


class _Proxy(BaseHTTPRequestHandler):
    stalling: Stalling
    upstream: str
    hold_path: str
    holding: list[bool]  # [still to hold one]
    stop: threading.Event
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        entry = Held(request_line=self.requestline, opened=time.monotonic())
        with self.stalling.lock:
            self.stalling.held.append(entry)
            hold = self.holding[0] and self.path.split("?", 1)[0] == self.hold_path
            if hold:
                self.holding[0] = False
        if hold:
            _hold(self.connection, entry, self.stop)
            self.close_connection = True
            return
        headers = {
            k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
        }
        with httpx.Client(timeout=120) as client:
            answer = client.request(
                self.command, self.upstream + self.path, content=body, headers=headers
            )
        self.send_response(answer.status_code)
        for key, value in answer.headers.items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)
        entry.closed = time.monotonic()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


@contextmanager
def holding_proxy(upstream: str, hold_path: str) -> Iterator[Stalling]:
    """A proxy to `upstream` that holds the first request to `hold_path` (no query)."""
    stalling = Stalling()
    stop = threading.Event()
    handler = type(
        "Proxy",
        (_Proxy,),
        {
            "stalling": stalling,
            "upstream": upstream,
            "hold_path": hold_path,
            "holding": [True],
            "stop": stop,
        },
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    stalling.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="holding-proxy", daemon=True)
    thread.start()
    try:
        yield stalling
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
