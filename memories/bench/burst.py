"""`memflow bench burst`: what a real server answers to bursts and large writes (issue 33).

Over HTTP to a real `memflow serve` with its own settings (the statement
time limit of its web processes, `MEMFLOW_KEY_CONCURRENCY`,
`MEMFLOW_KEY_WAIT_S` from the environment, as for a user):

- `burst`: thirty core-memory adds from one key, all sent at once, no client
  retries: how each was answered, how many lines landed, the wall time and
  each request's latency;
- `large_writes`: two bulk imports of 1,000 and a forget-by-filter at once
  (the first import's rows), with one key: each one's status and code and
  its time.

Nothing is asserted; `MEMFLOW_KEY_WAIT_S=0` gives the refuse-at-once limiter
memflow had before, for a before/after figure.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from django.conf import settings

from contexts.models import Workspace
from contexts.tenancy import services as context_services
from memories.bench.run import _summary, bench_user, data_dir, machine, say
from memories.bench.serving import bench_server
from memories.models import CoreMemory, Memory


def bench_burst(*, burst: int = 30, bulk: int = 1000) -> dict[str, Any]:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    user = bench_user()
    run = uuid.uuid4().hex[:8]
    workspace = context_services.workspace_create(user=user, slug=f"bench-burst-{run}")
    key = context_services.apikey_create(
        user=user, workspace=workspace, scope="write", name="bench-burst"
    )
    try:
        with bench_server(data_dir(), raw_key=key.raw) as served:
            base = f"{served.url}/api/v1/workspaces/{workspace.slug}/"
            with httpx.Client(
                timeout=300, headers={"Authorization": f"Bearer {key.raw}"}
            ) as client:
                bursts = _burst(client, base, workspace, burst)
                large = _large_writes(client, base, workspace, bulk)
    finally:
        context_services.workspace_delete(workspace=workspace)
    return {
        "bench": "burst",
        "key_concurrency": settings.MEMFLOW_KEY_CONCURRENCY,
        "key_wait_s": settings.MEMFLOW_KEY_WAIT_S,
        "burst": bursts,
        "large_writes": large,
        "machine": machine(),
    }


def _burst(client: httpx.Client, base: str, workspace: Workspace, burst: int) -> dict[str, Any]:
    facts = [f"Burst fact number {n:02d} of this run." for n in range(burst)]

    def add(fact: str) -> tuple[int, str, float]:
        t0 = time.perf_counter()
        answer = client.post(base + "core/memory/", json={"action": "add", "content": fact})
        code = answer.json().get("code", "") if answer.is_error else ""
        return answer.status_code, code, (time.perf_counter() - t0) * 1000

    started = time.perf_counter()
    with ThreadPoolExecutor(burst) as pool:
        answers = list(pool.map(add, facts))
    wall_ms = (time.perf_counter() - started) * 1000
    doc = CoreMemory.objects.filter(workspace=workspace, scope=CoreMemory.Scope.WORKSPACE).first()
    landed = sum(fact in (doc.content if doc else "") for fact in facts)
    outcomes = Counter(f"{status} {code}".strip() for status, code, _ in answers)
    say(f"  burst of {burst}: {dict(outcomes)}, {landed} landed in {wall_ms:,.0f} ms")
    return {
        "requests": burst,
        "answers": dict(outcomes),
        "landed": landed,
        "wall_ms": round(wall_ms, 1),
        "latency": _summary([ms for _, _, ms in answers]),
    }


def _large_writes(
    client: httpx.Client, base: str, workspace: Workspace, bulk: int
) -> dict[str, Any]:
    seed = [{"text": f"Seeded note {n} about the old build farm."} for n in range(200)]
    client.post(base + "memories/bulk/", json={"items": seed}).raise_for_status()

    def bulk_import(tag: str) -> dict[str, Any]:
        items = [
            {"text": f"Import {tag} line {n}: the service {n} runs on host {n % 97}."}
            for n in range(bulk)
        ]
        return _timed(client, "post", base + "memories/bulk/", {"items": items})

    def forget() -> dict[str, Any]:
        return _timed(client, "post", base + "memories/forget/", {"contains": "old build farm"})

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(bulk_import, "a")
        second = pool.submit(bulk_import, "b")
        forgetting = pool.submit(forget)
        results: dict[str, Any] = {
            "import_a": first.result(),
            "import_b": second.result(),
            "forget": forgetting.result(),
        }
    results["rows_after"] = Memory.objects.filter(workspace=workspace).count()
    say(f"  large writes: {results}")
    return results


def _timed(client: httpx.Client, method: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    answer = client.request(method, url, json=body)
    took = (time.perf_counter() - t0) * 1000
    code = answer.json().get("code", "") if answer.is_error else ""
    return {
        "status": answer.status_code,
        "code": code,
        "retry_after": answer.headers.get("Retry-After"),
        "ms": round(took, 1),
    }
