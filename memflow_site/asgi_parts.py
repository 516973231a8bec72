"""Small ASGI pieces shared by the layers in front of Django and the MCP SDK.

Typed loosely (`Any`): starlette's and a2wsgi's callables say the same in two
vocabularies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


async def send_json(
    send: Any, status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None
) -> None:
    """A whole JSON answer, `{"code", "detail"}` as the REST API gives its errors."""
    payload = json.dumps(body).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


def replay(body: bytes, original: Any) -> Any:
    """A body already read, given again; after it, the client's own messages (a disconnect)."""
    sent = False

    async def receive() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive
