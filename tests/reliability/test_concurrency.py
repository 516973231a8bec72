"""Fifty concurrent writers through a real server on loopback (two worker
processes): one core memory document, one state key. No write is lost, every
write is answered, and a state key never has two current values."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from memories import services
from memories.models import CoreMemory, CoreRevision, Memory

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 50


def all_at_once(url: str, keys: list[str], bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """POST every body from its own thread, with its own key (one agent each), released
    together by a barrier: one key may only have a few requests in flight at once."""
    barrier = threading.Barrier(len(bodies))

    def send(key: str, body: dict[str, Any]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(headers=headers, timeout=120) as client:
            barrier.wait()
            return client.post(url, json=body)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        answers = list(pool.map(send, keys, bodies))
    statuses = Counter(a.status_code for a in answers)
    print(f"{len(bodies)} writers answered in {time.monotonic() - started:.2f}s: {dict(statuses)}")
    return answers


def test_fifty_concurrent_core_memory_adds_all_land(live, acme, bob, make_key):
    bodies = [
        {"action": "add", "content": f"Writer {i:02d} was here", "session": f"s-{i}"}
        for i in range(WRITERS)
    ]
    url = f"{live.url}/api/v1/workspaces/acme/core/memory/"
    answers = all_at_once(url, [make_key(bob) for _ in bodies], bodies)

    assert [a.status_code for a in answers] == [200] * WRITERS, [a.text for a in answers]
    assert {a.json()["outcome"] for a in answers} == {"added"}
    doc = CoreMemory.objects.get(workspace=acme, scope="memory")
    lines = doc.content.splitlines()
    assert sorted(lines) == sorted(f"Writer {i:02d} was here §" for i in range(WRITERS))
    assert doc.version == WRITERS
    # Each writer saw its own version: the row lock serialised them all.
    assert sorted(a.json()["version"] for a in answers) == list(range(1, WRITERS + 1))
    assert CoreRevision.objects.filter(core=doc).count() == WRITERS


def test_fifty_concurrent_writes_to_one_state_key_keep_one_current_value(live, acme, bob, make_key):
    bodies = [
        {
            "text": f"The release train is now driven by conductor number {i}",
            "state_key": "release.conductor",
            "state_value": f"conductor-{i}",
        }
        for i in range(WRITERS)
    ]
    url = f"{live.url}/api/v1/workspaces/acme/memories/"
    answers = all_at_once(url, [make_key(bob) for _ in bodies], bodies)

    assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers]
    created = [a.json()["id"] for a in answers if a.json()["outcome"] == "created"]
    print("outcomes:", dict(Counter(a.json()["outcome"] for a in answers)))
    chain = list(
        Memory.objects.filter(workspace=acme, state_key="release.conductor").order_by(
            "valid_from", "id"
        )
    )
    assert sorted(m.pk for m in chain) == sorted(created)
    current = [m for m in chain if m.valid_to is None]
    assert len(current) == 1
    # One unbroken chain: each closed value points at the one after it.
    for older, newer in itertools.pairwise(chain):
        assert older.superseded_by_id == newer.pk
    lookup = httpx.get(
        f"{live.url}/api/v1/workspaces/acme/states/release.conductor/",
        headers={"Authorization": f"Bearer {make_key(bob)}"},
    )
    assert lookup.status_code == 200
    assert lookup.json()["memory"]["id"] == current[0].pk


ROUNDS = 10


def test_two_entries_superseded_by_each_other_at_once_leave_one_current(live, acme, bob, make_key):
    """Each round, A→B and B→A race: one wins, the other is refused, the fact stays current."""
    keys = [make_key(bob), make_key(bob)]
    for round_ in range(ROUNDS):
        a, b = (
            services.memory_remember(
                workspace=acme,
                item=services.RememberInput(text=f"Round {round_}: the {word} deploys at nine"),
            ).memory
            for word in ("blue service", "green service")
        )
        barrier = threading.Barrier(2)

        def supersede(
            key: str, old: int, new: int, barrier: threading.Barrier = barrier
        ) -> httpx.Response:
            with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
                barrier.wait()
                return client.post(
                    f"{live.url}/api/v1/workspaces/acme/memories/{old}/supersede/",
                    json={"by": new},
                )

        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(supersede, keys, [a.pk, b.pk], [b.pk, a.pk]))
        assert sorted(r.status_code for r in answers) == [200, 409], [r.text for r in answers]
        current = Memory.objects.filter(pk__in=[a.pk, b.pk], valid_to__isnull=True)
        assert current.count() == 1, f"round {round_}: both retired"
