"""Chunked request bodies, given to Django with their length.

Django reads a WSGI body by its Content-Length; a chunked request has none,
so its body read as empty and a POST lost what it carried without a word.
Such a body is read here first (up to the request limit, else 413) and
passed on with the length it turned out to have.
"""

from __future__ import annotations

import json
from typing import Any

from a2wsgi.asgi_typing import ASGIApp, Receive, Scope, Send
from django.conf import settings


class ChunkedBodies:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _unsized(scope):
            await self.app(scope, receive, send)
            return
        limit = max(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0, settings.MEMFLOW_HOOK_MAX_BYTES)
        chunks: list[bytes] = []
        size = 0
        while True:
            message: Any = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"transfer-encoding"]
        headers.append((b"content-length", str(len(body)).encode()))
        sized: Any = {**scope, "headers": headers}
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(sized, replay, send)


def _unsized(scope: Scope) -> bool:
    pairs: Any = scope.get("headers", [])
    names = {k.lower(): v for k, v in pairs}
    return b"content-length" not in names and b"chunked" in names.get(b"transfer-encoding", b"")


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps(
        {"code": "request_too_large", "detail": f"The request body is over {limit:,} bytes."}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "trailers": False,
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
