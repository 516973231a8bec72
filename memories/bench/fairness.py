"""`memflow bench fairness`: heavy reads against a real server, and what they cost the hooks.

Over HTTP to a real `memflow serve`: the heavy reads alone (conflicts/,
insights/, stats/ with a read key), a prompt hook with nothing else running,
then the same prompts while `readers` threads, each with a key of its own,
keep one heavy read each in flight. Reported: each read's latency, the hook's quiet and loaded
percentiles and their ratio, and how the readers were answered (200, or 503
`busy` / 429 when the server kept them from the hooks' capacity).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import Any

import httpx

from contexts.tenancy import services as context_services
from memories.bench.corpus import load_corpus
from memories.bench.run import (
    _summary,
    bench_user,
    data_dir,
    ensure_loaded,
    forget_captures,
    machine,
    progress_printer,
    say,
)
from memories.bench.serving import bench_server
from memories.models import Memory

HEAVY = ("conflicts/", "insights/", "stats/")


def bench_fairness(
    *, size: int, prompts: int, reads: int = 20, readers: int = 8, real_vectors: int | None = None
) -> dict[str, Any]:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    corpus = load_corpus(data_dir(), size=size, queries_per_kind=max(prompts // 2, 1))
    workspace, _, _ = ensure_loaded(corpus, f"bench-{size}", real_vectors=real_vectors)
    user = bench_user()
    hook_key = context_services.apikey_create(
        user=user, workspace=workspace, scope="write", name="bench-fairness-hooks"
    )
    read_key = context_services.apikey_create(
        user=user, workspace=workspace, scope="read", name="bench-fairness-reads"
    )
    # Eight agents' scripts, each with a read key of its own.
    reader_keys = [
        context_services.apikey_create(
            user=user, workspace=workspace, scope="read", name=f"bench-fairness-reader-{n}"
        )
        for n in range(readers)
    ]
    texts = [q.query for q in corpus.queries if q.kind in ("paraphrase", "fragment")][:prompts]
    base = f"/api/v1/workspaces/{workspace.slug}/"
    try:
        with bench_server(data_dir(), raw_key=hook_key.raw) as served:
            reads_alone = _time_reads(served.url + base, read_key.raw, reads)
            quiet = _time_hooks(served.url, hook_key.raw, texts, "quiet")
            stop = threading.Event()
            outcomes: Counter[str] = Counter()
            threads = [
                threading.Thread(
                    target=_read_loop,
                    args=(served.url + base, reader_keys[n].raw, stop, outcomes, n),
                    daemon=True,
                )
                for n in range(readers)
            ]
            for thread in threads:
                thread.start()
            try:
                loaded = _time_hooks(served.url, hook_key.raw, texts, "loaded")
            finally:
                stop.set()
                for thread in threads:
                    thread.join(timeout=120)
    finally:
        for created in (hook_key, read_key, *reader_keys):
            created.key.delete()
        forget_captures(workspace)
    quiet_s, loaded_s = _summary(quiet), _summary(loaded)
    return {
        "bench": "fairness",
        "size": Memory.objects.filter(workspace=workspace, valid_to__isnull=True).count(),
        "heavy_reads_alone": reads_alone,
        "user_prompt_quiet": quiet_s,
        "user_prompt_with_heavy_reads": loaded_s,
        "concurrent_heavy_readers": readers,
        "hook_p95_ratio": round(loaded_s["p95_ms"] / quiet_s["p95_ms"], 2),
        "heavy_read_outcomes": dict(outcomes),
        "real_vectors": real_vectors if real_vectors is not None else "all",
        "machine": machine(),
    }


def _time_reads(base: str, raw_key: str, reads: int) -> dict[str, Any]:
    timings: dict[str, Any] = {}
    with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {raw_key}"}) as client:
        for path in HEAVY:
            for _ in range(3):  # warm: plans, caches (a cold first read may be stopped)
                if client.get(base + path).status_code == 200:
                    break
            values = []
            for _ in range(reads):
                t0 = time.perf_counter()
                answer = client.get(base + path)
                values.append((time.perf_counter() - t0) * 1000)
                if answer.status_code != 200:
                    say(f"  {path}: {answer.status_code} {answer.text[:200]}")
            timings[path.rstrip("/")] = _summary(values)
            say(f"  {path}: p50 {timings[path.rstrip('/')]['p50_ms']} ms")
    return timings


def _time_hooks(url: str, raw_key: str, texts: list[str], label: str) -> list[float]:
    values = []
    show = progress_printer(f"hooks ({label})")
    started = time.monotonic()
    with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {raw_key}"}) as client:
        for n, text in enumerate(texts):
            body = {
                "session_id": f"fair-{label}-{n % 20}",
                "prompt": text,
                "hook_event_name": "UserPromptSubmit",
            }
            t0 = time.perf_counter()
            client.post(f"{url}/api/v1/hooks/user-prompt", json=body).raise_for_status()
            if n >= 5:  # the first calls warm connections and caches
                values.append((time.perf_counter() - t0) * 1000)
            show(n + 1, len(texts), time.monotonic() - started)
    return values


def _read_loop(  # one reader: always one heavy read in flight
    base: str, raw_key: str, stop: threading.Event, outcomes: Counter[str], offset: int
) -> None:
    with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {raw_key}"}) as client:
        n = offset
        while not stop.is_set():
            path = HEAVY[n % len(HEAVY)]
            n += 1
            try:
                answer = client.get(base + path)
                outcomes[f"{path.rstrip('/')} {answer.status_code}"] += 1
                if answer.status_code in (429, 503):
                    stop.wait(float(answer.headers.get("Retry-After", "1")))
            except httpx.HTTPError as exc:
                outcomes[type(exc).__name__] += 1
