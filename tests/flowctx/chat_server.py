"""A real OpenAI-compatible chat-completions server on loopback, for tests.

`ChatServer` speaks just enough of `/v1/chat/completions` (SSE streaming and
plain JSON answers, error statuses, stalls) to stand in for vLLM or llama.cpp.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from contexts.flowctx.llm import LlmConfig


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `chunks` are streamed as SSE deltas; `content` is
    answered as one non-streamed JSON completion; otherwise `body` is sent raw."""

    status: int = 200
    chunks: tuple[str, ...] = ()
    content: str | None = None
    body: str = ""
    delay: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ChatServer:
    """Answers each POST with the next scripted reply; the last one repeats."""

    replies: list[Reply]
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._next(
                    Seen(path=self.path, headers=dict(self.headers.items()), body=body)
                )
                if reply.delay:
                    server._stopping.wait(reply.delay)
                # The client may have given up waiting, which is what a timeout test wants.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(reply)

            def _answer(self, reply: Reply) -> None:
                if reply.chunks:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for piece in reply.chunks:
                        chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                if reply.content is not None:
                    message = {"role": "assistant", "content": reply.content}
                    raw = json.dumps({"choices": [{"index": 0, "message": message}]})
                    content_type = "application/json"
                else:
                    raw, content_type = reply.body, "text/plain"
                data = raw.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.seen.append(seen)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def config(self, *, timeout: float = 5.0, retries: int = 2) -> LlmConfig:
        return LlmConfig(
            url=self.url, model="qwen-test", api_key="sk-local", timeout=timeout, retries=retries
        )

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()  # wake a stalled handler so shutdown is immediate
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def closed_port_url() -> str:
    """A loopback URL nothing listens on: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
