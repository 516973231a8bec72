"""One plain-HTTP/1.1 request over a socket, for `memflow hook`'s call to memflow.

`http.client` imports the email package and ssl at start, ~30 ms on a busy
two-core machine: more than the rest of a hook's start-up, paid on every
prompt and tool call. A hook talks to one known server (uvicorn, usually on
loopback) with one small request, so it asks with `Connection: close`,
reads to the end and parses the status, the headers it needs and a body sent
whole or chunked. https URLs go through http.client (see hook_client.exchange).
"""

from __future__ import annotations

import socket
import time


class Unreachable(OSError):
    """The connection itself was not made in time: nothing answers at that address now."""


class BadResponse(ValueError):
    """What came back is not an HTTP/1.x response."""


def request(
    host: str,
    port: int,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes | None,
    *,
    deadline: float,
    connect_timeout: float,
) -> tuple[int, bytes]:
    """(status, body) of one exchange that never outlives `deadline` (time.monotonic())."""
    try:
        sock = socket.create_connection((host, port), timeout=min(connect_timeout, _left(deadline)))
    except TimeoutError as exc:
        raise Unreachable(f"no connection to {host}:{port} within {connect_timeout:g} s") from exc
    try:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        sock.settimeout(_left(deadline))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        chunks: list[bytes] = []
        while True:
            sock.settimeout(_left(deadline))
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    return parse(b"".join(chunks))


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no time left")
    return left


def parse(data: bytes) -> tuple[int, bytes]:
    head, sep, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    parts = status_line.split(b" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise BadResponse(f"not an HTTP response: {data[:60]!r}")
    fields: dict[bytes, bytes] = {}
    for line in header_lines:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        return int(parts[1]), _unchunk(rest)
    length = fields.get(b"content-length")
    if length is not None and length.isdigit():
        if len(rest) < int(length):
            raise BadResponse("the response ended before its body did")
        return int(parts[1]), rest[: int(length)]
    return int(parts[1]), rest


def _unchunk(data: bytes) -> bytes:
    body: list[bytes] = []
    at = 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            raise BadResponse("a chunked body ended early")
        size_text = data[at:line_end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BadResponse(f"a bad chunk size: {size_text[:20]!r}") from None
        if size == 0:
            return b"".join(body)
        start = line_end + 2
        if len(data) < start + size:
            raise BadResponse("a chunked body ended early")
        body.append(data[start : start + size])
        at = start + size + 2
