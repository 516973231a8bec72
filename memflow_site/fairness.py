"""One credential cannot hold every web thread, and its bursts wait their turn.

An ASGI wrapper in front of Django's thread pool (asgi.py), so a waiting or
refused request costs no thread: each API request (hooks aside: they have
threads of their own) is counted against the credential it carries, its
Authorization header or its session cookie, or else the client's address.
Past `MEMFLOW_KEY_CONCURRENCY` requests in flight in this process, the next
waits for one of them to finish, in the order they came, for at most
`MEMFLOW_KEY_WAIT_S`; one still without a slot then is answered 429
`too_many_concurrent_requests` with a Retry-After, before any work is done.
A burst of writes from one agent thus lands instead of being refused.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from a2wsgi.asgi_typing import ASGIApp, Receive, Scope, Send
from django.conf import settings

from memflow_site.asgi_parts import send_json

API_PREFIX = "/api/v1/"
HOOK_PREFIX = "/api/v1/hooks/"


@dataclass
class _Slots:
    """One credential's requests in flight, and those waiting for one to finish."""

    in_flight: int = 0
    # Each waiter's future is resolved True when a slot is handed to it, False
    # when its wait is over; resolved ones leave the queue at once.
    waiting: deque[asyncio.Future[bool]] = field(default_factory=deque)


class CredentialLimit:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # One event loop per process: the slots need no lock.
        self.slots: dict[str, _Slots] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(API_PREFIX) or path.startswith(HOOK_PREFIX):
            await self.app(scope, receive, send)
            return
        who = credential_of(scope)
        limit = settings.MEMFLOW_KEY_CONCURRENCY
        if not await self.acquire(who, limit, settings.MEMFLOW_KEY_WAIT_S):
            await _refuse(send, limit, settings.MEMFLOW_KEY_WAIT_S)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.release(who)

    async def acquire(self, who: str, limit: int, wait_s: float) -> bool:
        """A slot for `who`, at once or after those who came first; False once `wait_s` ran out."""
        slots = self.slots.setdefault(who, _Slots())
        if slots.in_flight < limit and not slots.waiting:
            slots.in_flight += 1
            return True
        if wait_s <= 0:
            self._forget_if_idle(who, slots)
            return False
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[bool] = loop.create_future()
        slots.waiting.append(turn)
        timer = loop.call_later(wait_s, self._give_up, who, slots, turn)
        try:
            return await turn
        except asyncio.CancelledError:
            # The request was cancelled while it waited; a slot handed to it
            # in the same moment goes on to the next in line.
            if turn.done() and not turn.cancelled() and turn.result():
                self.release(who)
            elif turn in slots.waiting:
                slots.waiting.remove(turn)
                self._forget_if_idle(who, slots)
            raise
        finally:
            timer.cancel()

    def release(self, who: str) -> None:
        """A request of `who` is done: its slot goes to the first in line, else is freed."""
        slots = self.slots[who]
        while slots.waiting:
            turn = slots.waiting.popleft()
            if not turn.done():  # a cancelled waiter may not have left the line yet
                turn.set_result(True)  # the slot changes hands; the count stays
                return
        slots.in_flight -= 1
        self._forget_if_idle(who, slots)

    def _give_up(self, who: str, slots: _Slots, turn: asyncio.Future[bool]) -> None:
        if turn.done():
            return
        slots.waiting.remove(turn)
        turn.set_result(False)
        self._forget_if_idle(who, slots)

    def _forget_if_idle(self, who: str, slots: _Slots) -> None:
        if not slots.in_flight and not slots.waiting and self.slots.get(who) is slots:
            del self.slots[who]


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


async def _refuse(send: Send, limit: int, wait_s: float) -> None:
    waited = f" and none finished within {wait_s:g} s" if wait_s > 0 else ""
    detail = (
        f"This credential already has {limit} requests in flight{waited}; wait for one to finish."
    )
    await send_json(
        send,
        429,
        {"code": "too_many_concurrent_requests", "detail": detail},
        {"Retry-After": "1"},
    )
