"""One credential cannot hold every web thread.

An ASGI wrapper in front of Django's thread pool (asgi.py), so a refusal
costs no thread: each API request (hooks aside: they have threads of their
own) is counted against the credential it carries, its Authorization header
or its session cookie, or else the client's address. Past
`MEMFLOW_KEY_CONCURRENCY` requests in flight in this process, the next is
answered at once with 429 `too_many_concurrent_requests` and a Retry-After.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from http.cookies import SimpleCookie
from typing import Any

from a2wsgi.asgi_typing import ASGIApp, Receive, Scope, Send
from django.conf import settings

from memflow_site.asgi_parts import send_json

API_PREFIX = "/api/v1/"
HOOK_PREFIX = "/api/v1/hooks/"


class CredentialLimit:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # One event loop per process: the counter needs no lock.
        self.in_flight: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(API_PREFIX) or path.startswith(HOOK_PREFIX):
            await self.app(scope, receive, send)
            return
        who = credential_of(scope)
        limit = settings.MEMFLOW_KEY_CONCURRENCY
        if self.in_flight[who] >= limit:
            await _refuse(send, limit)
            return
        self.in_flight[who] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight[who] -= 1
            if not self.in_flight[who]:
                del self.in_flight[who]


def credential_of(scope: Scope) -> str:
    """A stable, non-reversible name for what authenticates the request."""
    pairs: Any = scope.get("headers", [])
    headers = {name.lower(): value for name, value in pairs}
    raw = headers.get(b"authorization", b"").decode("latin-1")
    if not raw and b"cookie" in headers:
        cookie = SimpleCookie()
        try:
            cookie.load(headers[b"cookie"].decode("latin-1"))
        except Exception:  # a malformed cookie header authenticates nothing
            cookie = SimpleCookie()
        morsel = cookie.get(settings.SESSION_COOKIE_NAME)
        raw = f"session:{morsel.value}" if morsel else ""
    if not raw:
        client: Any = scope.get("client") or ("", 0)
        raw = f"addr:{client[0]}"
    return hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:32]


async def _refuse(send: Send, limit: int) -> None:
    detail = f"This credential already has {limit} requests in flight; wait for one to finish."
    await send_json(
        send,
        429,
        {"code": "too_many_concurrent_requests", "detail": detail},
        {"Retry-After": "1"},
    )
