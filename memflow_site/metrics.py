"""`GET /metrics`: Prometheus figures for whoever runs memflow.

Requests are counted by an ASGI layer in front of everything (`MetricsLayer`),
after the answer has gone out, so a hook waits for none of it; hooks also get
a latency histogram per event. Queue depth is read from django-q2's table at
scrape time; each web process's connection pool and embedding model are
sampled by a thread of its own every few seconds.

`memflow serve` runs several web processes: it gives them one directory
(`PROMETHEUS_MULTIPROC_DIR`, see `multiprocess_dir`), prometheus_client's
multiprocess mode keeps each process's figures in files there, and a scrape,
whichever process answers it, adds them all up. Without that variable
(tests, `runserver`) the figures are this process's alone.

Access: only loopback clients that no proxy forwarded, unless
`MEMFLOW_METRICS_TOKEN` is set, when every client must send it as a bearer
token; `MEMFLOW_METRICS=false` turns the endpoint off.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
SAMPLE_EVERY_S = 5.0
_HOOK_PREFIX = "/api/v1/hooks/"
_HOOK_EVENTS = frozenset(
    {
        "session-start",
        "user-prompt",
        "post-tool-use",
        "post-tool-use-failure",
        "stop",
        "pre-compact",
        "session-end",
    }
)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

REQUESTS = Counter(
    "memflow_http_requests",
    "HTTP requests answered, by route name, method and status class.",
    ["route", "method", "status"],
)
HOOK_SECONDS = Histogram(
    "memflow_hook_duration_seconds",
    "Time from a hook request's arrival to the end of its answer, by hook event.",
    ["event"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
# Per-process gauges summed over the processes alive (a dead one's are dropped).
POOL_CONNECTIONS = Gauge(
    "memflow_db_pool_connections",
    "Connections in the web processes' pools, in use or idle.",
    ["state"],
    multiprocess_mode="livesum",
)
POOL_MAX = Gauge(
    "memflow_db_pool_max_connections",
    "The most connections the web processes' pools may open.",
    multiprocess_mode="livesum",
)
POOL_WAITING = Gauge(
    "memflow_db_pool_waiting_requests",
    "Requests waiting for a connection from a pool now.",
    multiprocess_mode="livesum",
)
POOL_REQUESTS = Counter("memflow_db_pool_requests", "Connections asked of the pools.", ["outcome"])
POOL_WAIT_SECONDS = Counter(
    "memflow_db_pool_wait_seconds", "Time spent waiting for a connection from a pool."
)
EMBEDDINGS = Gauge(
    "memflow_embeddings_processes",
    "Web processes by the state of their embedding model (idle, loading, ready, error).",
    ["state"],
    multiprocess_mode="livesum",
)
_EMBEDDING_STATES = ("idle", "loading", "ready", "error")


# --- the directory shared by `memflow serve`'s web processes -------------------


def multiprocess_dir(data_dir: Path) -> Path:
    """An empty directory for this `memflow serve` (named by its pid); those of
    servers no longer running are removed."""
    base = data_dir / "metrics"
    base.mkdir(parents=True, exist_ok=True)
    for child in base.iterdir():
        if child.is_dir() and (not child.name.isdigit() or not psutil.pid_exists(int(child.name))):
            shutil.rmtree(child, ignore_errors=True)
    mine = base / str(os.getpid())
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    return mine


def _multiprocess_path() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


# --- counting requests ---------------------------------------------------------


@functools.lru_cache(maxsize=4096)  # resolving runs on the event loop: once per path
def route_of(path: str) -> str:
    """The Django route name of `path` (its pattern when unnamed), for a label."""
    from django.conf import settings
    from django.urls import Resolver404, resolve

    if path.startswith("/mcp"):
        return "mcp"
    if settings.STATIC_URL and path.startswith(settings.STATIC_URL):
        return "static"
    try:
        match = resolve(path)
    except Resolver404:
        return "unmatched"
    return match.view_name or match.route


class MetricsLayer:
    """Counts every request once its answer is sent: the client never waits on it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        sampler_start()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sampler_start()
        started = time.perf_counter()
        status = 500  # what the client gets if the app fails before answering

        async def send_counted(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            try:
                _count(scope, status, time.perf_counter() - started)
            except Exception:  # a figure missed must never fail the request
                logger.exception("counting a request for /metrics failed")


def _count(scope: Any, status: int, seconds: float) -> None:
    path = scope.get("path", "")
    method = scope.get("method", "")
    method = method if method in _METHODS else "other"
    if path.startswith(_HOOK_PREFIX):
        event = path[len(_HOOK_PREFIX) :]
        route = "api-hook"
        HOOK_SECONDS.labels(event if event in _HOOK_EVENTS else "other").observe(seconds)
    else:
        route = route_of(path)
    REQUESTS.labels(route, method, f"{status // 100}xx").inc()


# --- sampling each process -----------------------------------------------------

_sampler_pid: int | None = None
_sampler_lock = threading.Lock()
_sample_lock = threading.Lock()
_pool_seen: dict[str, float] = {}


def sampler_start() -> None:
    """This process's sampling thread, started once (again in a forked child)."""
    global _sampler_pid
    if _sampler_pid == os.getpid():
        return
    with _sampler_lock:
        if _sampler_pid == os.getpid():
            return
        _sampler_pid = os.getpid()
        threading.Thread(target=_sample_forever, name="metrics-sampler", daemon=True).start()


def _sample_forever() -> None:
    while True:
        try:
            sample_process()
        except Exception:  # a figure missed must never end the thread
            logger.exception("sampling metrics failed")
        time.sleep(SAMPLE_EVERY_S)


def _pool() -> Any:
    """The process's psycopg pool, if it has one; never creates it."""
    from django.db import connections

    pools = getattr(type(connections["default"]), "_connection_pools", {})
    return pools.get("default")


def sample_process() -> None:
    """This process's pool and embedding model, into its figures (one sampler at a time)."""
    with _sample_lock:
        _sample()


def _sample() -> None:
    from memories import embeddings

    state, _ = embeddings.status()
    for name in _EMBEDDING_STATES:
        EMBEDDINGS.labels(name).set(1 if state == name else 0)
    pool = _pool()
    if pool is None:
        return
    stats = pool.get_stats()
    size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
    POOL_CONNECTIONS.labels("in_use").set(max(0, size - idle))
    POOL_CONNECTIONS.labels("idle").set(idle)
    POOL_MAX.set(stats.get("pool_max", 0))
    POOL_WAITING.set(stats.get("requests_waiting", 0))
    # The pool's own counters only grow: add what they grew by since last time.
    for key, counter in (
        ("requests_num", POOL_REQUESTS.labels("served")),
        ("requests_queued", POOL_REQUESTS.labels("queued")),
        ("requests_errors", POOL_REQUESTS.labels("failed")),
    ):
        counter.inc(_grown(key, stats.get(key, 0)))
    POOL_WAIT_SECONDS.inc(_grown("requests_wait_ms", stats.get("requests_wait_ms", 0)) / 1000)


def _grown(key: str, value: float) -> float:
    before = _pool_seen.get(key, 0)
    _pool_seen[key] = value
    return max(0, value - before)


# --- the scrape ----------------------------------------------------------------


class QueueCollector(Collector):
    """django-q2's queue depth, read from its table when scraped."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from django.db import DatabaseError
        from django_q.models import OrmQ

        try:
            depth = OrmQ.objects.count()
        except DatabaseError:
            logger.warning("metrics: the task queue could not be read", exc_info=True)
            return
        yield GaugeMetricFamily(
            "memflow_queue_depth", "Background tasks queued and not yet done.", value=depth
        )


def _drop_dead_processes(path: str) -> None:
    """A web process that died (and was replaced) leaves its live gauges behind."""
    pids = set()
    for name in os.listdir(path):
        if name.startswith("gauge_live") and name.endswith(".db"):
            digits = name.rsplit("_", 1)[-1].removesuffix(".db")
            if digits.isdigit():
                pids.add(int(digits))
    for pid in pids:
        if not psutil.pid_exists(pid):
            multiprocess.mark_process_dead(pid, path)


def metrics_render() -> tuple[bytes, str]:
    """The exposition text, all web processes added up."""
    sample_process()  # this process's figures, fresh
    path = _multiprocess_path()
    if path is None:
        registry = CollectorRegistry()
        registry.register(_Forward(REGISTRY))
    else:
        _drop_dead_processes(path)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=path)
    registry.register(QueueCollector())
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _Forward(Collector):
    """The process's default registry, inside one that also holds the queue."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Any]:
        yield from self.registry.collect()


# --- who may scrape ------------------------------------------------------------


def access_refusal(*, client: str, headers: Mapping[str, str]) -> tuple[int, str, str] | None:
    """Why a scrape is refused, as (status, code, detail); None when it is allowed."""
    from django.conf import settings

    token = settings.MEMFLOW_METRICS_TOKEN
    if token:
        given = headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            value.strip().encode(), token.encode()
        ):
            return 401, "metrics_token_required", "Send MEMFLOW_METRICS_TOKEN as a bearer token."
        return None
    if not _is_loopback(client) or "x-forwarded-for" in headers or "forwarded" in headers:
        return (
            403,
            "metrics_loopback_only",
            "/metrics answers loopback clients only; set MEMFLOW_METRICS_TOKEN to scrape "
            "from elsewhere.",
        )
    return None


def _is_loopback(client: str) -> bool:
    try:
        return ipaddress.ip_address(client).is_loopback
    except ValueError:
        return False


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    from django.conf import settings

    if not settings.MEMFLOW_METRICS:
        raise Http404("/metrics is turned off (MEMFLOW_METRICS=false).")
    refusal = access_refusal(client=request.META.get("REMOTE_ADDR", ""), headers=request.headers)
    if refusal is not None:
        status, code, detail = refusal
        refused = JsonResponse({"code": code, "detail": detail}, status=status)
        if status == 401:
            refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused
    body, content_type = metrics_render()
    answer = HttpResponse(body, content_type=content_type)
    answer["Cache-Control"] = "no-store"
    return answer
