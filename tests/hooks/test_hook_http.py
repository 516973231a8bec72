"""`memflow hook`'s socket-level request: what servers really send back, over real sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from memflow_site.client import http as hook_http


@contextmanager
def answering(raw: bytes) -> Iterator[tuple[int, list[bytes]]]:
    """A server on loopback that reads one request and sends `raw` back as it is."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    seen: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            seen.append(conn.recv(65536))
            conn.sendall(raw)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], seen
    finally:
        listener.close()
        thread.join(timeout=10)


def ask(port: int, body: bytes | None = b'{"a": 1}') -> tuple[int, bytes]:
    return hook_http.request(
        "127.0.0.1",
        port,
        "POST",
        "/api/v1/hooks/stop",
        {"Authorization": "Bearer k"},
        body,
        deadline=time.monotonic() + 10,
        connect_timeout=5,
    )


def test_a_whole_body_and_what_was_sent():
    with answering(b'HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\n{"x":1}') as (
        port,
        seen,
    ):
        assert ask(port) == (200, b'{"x":1}')
    request = seen[0]
    assert request.startswith(b"POST /api/v1/hooks/stop HTTP/1.1\r\n")
    assert b"Authorization: Bearer k\r\n" in request and b"Content-Length: 8\r\n" in request
    assert request.endswith(b'\r\n\r\n{"a": 1}')


def test_a_chunked_body_is_put_back_together():
    raw = b'HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"de\r\n6\r\ntail"}\r\n0\r\n\r\n'
    with answering(raw) as (port, _):
        assert ask(port) == (403, b'{"detail"}')


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["not-http", "cut-short", "bad-chunk"],
)
def test_a_broken_answer_is_a_value_error(raw):
    with answering(raw) as (port, _), pytest.raises(ValueError):
        ask(port)


def test_a_server_that_never_answers_runs_out_of_time():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        with pytest.raises(TimeoutError):
            hook_http.request(
                "127.0.0.1",
                listener.getsockname()[1],
                "POST",
                "/",
                {},
                b"{}",
                deadline=time.monotonic() + 0.3,
                connect_timeout=0.3,
            )
    finally:
        listener.close()


def test_a_session_start_sends_the_declaration_above_it_and_nothing_without_one(tmp_path):
    from memflow_site.client.hook import build_payload

    project = tmp_path / "project"
    (project / ".dsh").mkdir(parents=True)
    (project / ".dsh" / "context.yaml").write_text("systemPrompt: [PROTOCOL.md]\n")
    (project / "PROTOCOL.md").write_text("Write things down.\n")
    (project / "src").mkdir()
    bare = tmp_path / "bare"
    bare.mkdir()

    declared = build_payload("session-start", {"cwd": str(project / "src")}, {})
    assert "Write things down." in str(declared["context"])
    assert "context" not in build_payload("session-start", {"cwd": str(bare)}, {})
