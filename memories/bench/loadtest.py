"""A bounded, self-stopping load test with hook-shaped traffic.

Many agent sessions at once, each doing what Claude Code's hooks do:
`session-start`, then turns of `user-prompt`, a few `post-tool-use` and
`stop`. Each concurrency level runs for a fixed time (and at most a fixed
number of requests), then stops by itself; the answer reports, per level and
per endpoint, requests per second and latency percentiles, and the first level
where latency degrades.

Only loopback addresses are accepted as targets: this is for measuring a
server on this machine, never a way to flood someone else's.

    from memories.bench.loadtest import load_run
    report = load_run(url="http://127.0.0.1:8000", api_key="mf_…", workspace="default",
                      seconds=10, concurrency_levels=[1, 2, 4, 8, 16])
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import math
import random
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

EVENTS = ("session-start", "user-prompt", "post-tool-use", "stop")
TOOLS_PER_TURN = 3
# A level "degrades" when its p95 passes this multiple of the first level's.
DEGRADED_P95_FACTOR = 2.0
REQUEST_TIMEOUT = 30.0

_PROMPTS = (
    "why does the nightly build fail on the integration step",
    "add a retry with backoff to the payments webhook client",
    "which database does the reporting service read from",
    "rename the config flag and update every caller",
    "the flaky test in test_sessions.py fails about one run in ten, find out why",
    "summarise what changed in the auth middleware this week",
    "write a migration that backfills the new column in batches of 1000",
    "what port does the staging proxy listen on",
)
_OUTPUT = "\n".join(f"tests/test_module_{n}.py::test_case_{n} PASSED [{n}%]" for n in range(1, 41))


class LoadTargetError(ValueError):
    """The URL is not on this machine's loopback interface."""


def require_loopback(url: str) -> None:
    host = urlsplit(url).hostname
    if not host:
        raise LoadTargetError(f"{url!r} names no host")
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except socket.gaierror as exc:
        raise LoadTargetError(f"{host!r} does not resolve: {exc}") from None
    for address in addresses:
        if not ipaddress.ip_address(address.split("%")[0]).is_loopback:
            raise LoadTargetError(f"{host!r} is {address}, not a loopback address")


@dataclass
class _Level:
    concurrency: int
    latencies: dict[str, list[float]] = field(default_factory=lambda: {e: [] for e in EVENTS})
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVENTS, 0))
    error_samples: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values()) + sum(self.errors.values())


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest-rank."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def _payload(event: str, session_id: str, workspace: str, rng: random.Random) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": session_id,
        "workspace": workspace,
        "cwd": "/home/load/project",
        "app": "loadtest",
    }
    if event == "session-start":
        body["source"] = "startup"
    elif event == "user-prompt":
        body["prompt"] = f"{rng.choice(_PROMPTS)} ({rng.randrange(10_000)})"
    elif event == "post-tool-use":
        body.update(
            tool_name="Bash",
            tool_input={"command": "pytest -q"},
            tool_response={"stdout": _OUTPUT, "stderr": "", "exit_code": 0},
        )
    else:
        body["stop_hook_active"] = False
    return body


def _session_events() -> Iterator[str]:
    yield "session-start"
    while True:
        yield "user-prompt"
        yield from ["post-tool-use"] * TOOLS_PER_TURN
        yield "stop"


async def _session(
    client: httpx.AsyncClient,
    level: _Level,
    *,
    workspace: str,
    deadline: float,
    budget: list[int],
    rng: random.Random,
) -> None:
    """One agent session after another until the deadline or the request budget."""
    while time.monotonic() < deadline:
        session_id = f"load-{uuid.uuid4().hex[:12]}"
        for event in itertools.islice(_session_events(), 2 + 5 * rng.randint(2, 6)):
            if time.monotonic() >= deadline or budget[0] <= 0:
                return
            budget[0] -= 1
            body = _payload(event, session_id, workspace, rng)
            started = time.monotonic()
            try:
                answer = await client.post(f"/api/v1/hooks/{event}", json=body)
                ok = answer.status_code == 200
                problem = "" if ok else f"{event}: HTTP {answer.status_code} {answer.text[:200]}"
            except httpx.HTTPError as exc:
                ok, problem = False, f"{event}: {type(exc).__name__}: {exc}"
            if ok:
                level.latencies[event].append(time.monotonic() - started)
            else:
                level.errors[event] += 1
                if len(level.error_samples) < 5:
                    level.error_samples.append(problem)


async def _run_level(
    *,
    url: str,
    api_key: str,
    workspace: str,
    seconds: float,
    concurrency: int,
    max_requests: int,
    seed: int,
) -> _Level:
    level = _Level(concurrency=concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=REQUEST_TIMEOUT,
        limits=limits,
    ) as client:
        started = time.monotonic()
        deadline = started + seconds
        budget = [max_requests]
        await asyncio.gather(
            *(
                _session(
                    client,
                    level,
                    workspace=workspace,
                    deadline=deadline,
                    budget=budget,
                    rng=random.Random(seed * 1000 + n),
                )
                for n in range(concurrency)
            )
        )
        # Requests in flight at the deadline finish: count the time they took.
        level.elapsed = time.monotonic() - started
    return level


def _summary(level: _Level) -> dict[str, Any]:
    everything = [x for values in level.latencies.values() for x in values]
    ms = 1000.0
    return {
        "concurrency": level.concurrency,
        "seconds": round(level.elapsed, 2),
        "requests": level.requests,
        "errors": sum(level.errors.values()),
        "error_samples": level.error_samples,
        "rps": round(len(everything) / level.elapsed, 1) if level.elapsed else 0.0,
        "p50_ms": round(percentile(everything, 50) * ms, 1),
        "p95_ms": round(percentile(everything, 95) * ms, 1),
        "endpoints": {
            event: {
                "requests": len(values) + level.errors[event],
                "errors": level.errors[event],
                "rps": round(len(values) / level.elapsed, 1) if level.elapsed else 0.0,
                "p50_ms": round(percentile(values, 50) * ms, 1),
                "p95_ms": round(percentile(values, 95) * ms, 1),
            }
            for event, values in level.latencies.items()
        },
    }


def load_run(
    *,
    url: str,
    api_key: str,
    workspace: str,
    seconds: float,
    concurrency_levels: list[int],
    max_requests_per_level: int = 50_000,
    seed: int = 1,
) -> dict[str, Any]:
    """Run each concurrency level for `seconds`; report throughput and latency.

    `degrades_at` is the first level whose p95 is over DEGRADED_P95_FACTOR
    times the first level's (None if none is); `max_rps` is the best
    sustained requests/s, at `max_rps_concurrency`.
    """
    require_loopback(url)
    if seconds <= 0 or seconds > 600:
        raise ValueError("seconds must be in (0, 600]")
    if not concurrency_levels or any(c < 1 or c > 1000 for c in concurrency_levels):
        raise ValueError("each concurrency level must be in [1, 1000]")
    levels = [
        _summary(
            asyncio.run(
                _run_level(
                    url=url.rstrip("/"),
                    api_key=api_key,
                    workspace=workspace,
                    seconds=seconds,
                    concurrency=concurrency,
                    max_requests=max_requests_per_level,
                    seed=seed,
                )
            )
        )
        for concurrency in concurrency_levels
    ]
    baseline = levels[0]["p95_ms"]
    degrades_at = next(
        (
            level["concurrency"]
            for level in levels[1:]
            if level["p95_ms"] > DEGRADED_P95_FACTOR * baseline
        ),
        None,
    )
    best = max(levels, key=lambda level: level["rps"])
    return {
        "url": url,
        "workspace": workspace,
        "seconds_per_level": seconds,
        "levels": levels,
        "errors": sum(level["errors"] for level in levels),
        "degrades_at": degrades_at,
        "max_rps": best["rps"],
        "max_rps_concurrency": best["concurrency"],
    }


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table of a `load_run` report."""
    lines = [
        f"{'conc':>4} {'rps':>7} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6}   per endpoint p50/p95 ms"
    ]
    for level in report["levels"]:
        per = "  ".join(
            f"{event} {e['p50_ms']:.0f}/{e['p95_ms']:.0f}"
            for event, e in level["endpoints"].items()
        )
        lines.append(
            f"{level['concurrency']:>4} {level['rps']:>7.1f} {level['p50_ms']:>8.1f} "
            f"{level['p95_ms']:>8.1f} {level['errors']:>6}   {per}"
        )
    degrades = report["degrades_at"]
    lines.append(
        f"best {report['max_rps']:.1f} requests/s at concurrency {report['max_rps_concurrency']}; "
        + (
            f"p95 more than {DEGRADED_P95_FACTOR:g}x the first level's from concurrency {degrades}"
            if degrades
            else "p95 held within the degradation threshold at every level"
        )
    )
    return "\n".join(lines)
