"""The per-credential line (memflow_site/fairness.py), driven through its ASGI interface.

The requests here are ASGI calls into `CredentialLimit` in front of a small
app that holds each request until the test lets it go, so what is asserted
is order: who got a slot, in which order, and that every slot comes back.
The live-server side (thirty core adds from one key) is in
tests/reliability/test_bursts.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memflow_site.fairness import CredentialLimit

GUARD_S = 30


class HeldApp:
    """An ASGI app that answers 200 once the test releases the request's `n`."""

    def __init__(self) -> None:
        self.entered: list[int] = []
        self.release: dict[int, asyncio.Event] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        n = int(scope["query_string"])
        self.entered.append(n)
        await self.release.setdefault(n, asyncio.Event()).wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def let_go(self, n: int) -> None:
        self.release.setdefault(n, asyncio.Event()).set()


async def call(limit: CredentialLimit, n: int, key: str = "k") -> int:
    """One API request `n` with bearer `key`; its status."""
    scope = {
        "type": "http",
        "path": "/api/v1/workspaces/acme/memories/",
        "query_string": str(n).encode(),
        "headers": [(b"authorization", f"Bearer {key}".encode())],
        "client": ("127.0.0.1", 5000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asgi: Any = limit  # a2wsgi's ASGI types; the messages here are plain dicts
    await asgi(scope, receive, send)
    return int(sent[0]["status"])


async def until(condition: Any) -> None:
    async with asyncio.timeout(GUARD_S):
        while not condition():
            await asyncio.sleep(0)


def test_requests_past_the_limit_wait_and_take_their_turns_in_order(settings):
    settings.MEMFLOW_KEY_CONCURRENCY = 2
    settings.MEMFLOW_KEY_WAIT_S = GUARD_S

    async def scenario() -> None:
        app = HeldApp()
        limit = CredentialLimit(app)
        tasks = [asyncio.create_task(call(limit, n)) for n in range(6)]
        await until(lambda: len(app.entered) == 2)
        other = asyncio.create_task(call(limit, 99, key="someone else"))
        await until(lambda: 99 in app.entered)  # another credential is not held up
        assert app.entered == [0, 1, 99] and not any(t.done() for t in tasks)
        for n in range(6):
            app.let_go(n)
            await until(lambda n=n: tasks[n].done())
        app.let_go(99)
        assert [await t for t in tasks] == [200] * 6 and await other == 200
        assert app.entered == [0, 1, 99, 2, 3, 4, 5]
        assert limit.slots == {}  # every slot given back

    asyncio.run(scenario())


def test_a_request_without_a_slot_within_the_wait_is_refused_and_leaves_no_trace(settings):
    settings.MEMFLOW_KEY_CONCURRENCY = 1
    settings.MEMFLOW_KEY_WAIT_S = 0

    async def scenario() -> None:
        app = HeldApp()
        limit = CredentialLimit(app)
        first = asyncio.create_task(call(limit, 0))
        await until(lambda: app.entered == [0])
        assert await call(limit, 1) == 429  # no wait at all: refused at once
        assert not await limit.acquire("another", 0, 0.01)  # waited, then gave up
        assert "another" not in limit.slots
        # A request cancelled while it waits (its client went away) leaves the line.
        settings.MEMFLOW_KEY_WAIT_S = GUARD_S
        waiting = asyncio.create_task(call(limit, 3))
        await until(lambda: sum(len(s.waiting) for s in limit.slots.values()) == 1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        app.let_go(0)
        assert await first == 200
        assert limit.slots == {}

    asyncio.run(scenario())


def test_a_slot_handed_to_a_request_cancelled_in_the_same_moment_goes_on(settings):
    async def scenario() -> None:
        limit = CredentialLimit(HeldApp())
        assert await limit.acquire("k", 1, GUARD_S)
        second = asyncio.create_task(limit.acquire("k", 1, GUARD_S))
        third = asyncio.create_task(limit.acquire("k", 1, GUARD_S))
        await until(lambda: len(limit.slots["k"].waiting) == 2)
        limit.release("k")  # the slot is handed to the second…
        second.cancel()  # …which is cancelled before it could run
        with pytest.raises(asyncio.CancelledError):
            await second
        assert await third  # the slot went on to the next in line
        limit.release("k")
        assert limit.slots == {}

    asyncio.run(scenario())
