"""Chunked request bodies, given to Django with their length.

Django reads a WSGI body by its Content-Length; a chunked request has none,
so its body read as empty and a POST lost what it carried without a word.
Such a body is read here first (up to the request limit, else 413) and
passed on with the length it turned out to have.
"""

from __future__ import annotations

from typing import Any

from a2wsgi.asgi_typing import ASGIApp, Receive, Scope, Send
from django.conf import settings

from memflow_site.asgi_parts import replay, send_json


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
        await self.app(sized, replay(body, receive), send)


def _unsized(scope: Scope) -> bool:
    pairs: Any = scope.get("headers", [])
    names = {k.lower(): v for k, v in pairs}
    return b"content-length" not in names and b"chunked" in names.get(b"transfer-encoding", b"")


async def _too_large(send: Send, limit: int) -> None:
    detail = f"The request body is over {limit:,} bytes."
    await send_json(send, 413, {"code": "request_too_large", "detail": detail})
