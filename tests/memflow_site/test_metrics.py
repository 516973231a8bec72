"""`GET /metrics`: who may scrape it, and what a real `memflow serve` with two
web processes shows after some hook calls."""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings
from django_q.tasks import async_task
from prometheus_client.parser import text_string_to_metric_families

from contexts.tenancy import services
from tests.memflow_site.helpers import Served, env_for, serving
from tests.reliability.conftest import database_url_for_tests

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

Samples = dict[str, dict[frozenset[tuple[str, str]], float]]


def parse(text: str) -> Samples:
    """Each sample's value by name and labels."""
    samples: Samples = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name][frozenset(sample.labels.items())] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name].get(frozenset(labels.items()), 0.0)


@pytest.mark.django_db
def test_only_loopback_clients_no_proxy_forwarded_may_scrape(client):
    scraped = client.get("/metrics")
    assert scraped.status_code == 200
    assert scraped["Content-Type"].startswith("text/plain; version=")
    assert "memflow_queue_depth" in scraped.content.decode()

    remote = client.get("/metrics", REMOTE_ADDR="203.0.113.7")
    assert remote.status_code == 403 and remote.json()["code"] == "metrics_loopback_only"
    # A proxy on this host forwarding someone else's request is not a local client.
    forwarded = client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.7"})
    assert forwarded.status_code == 403


@pytest.mark.django_db
def test_a_token_lets_any_client_scrape_and_is_then_always_needed(client, settings):
    settings.MEMFLOW_METRICS_TOKEN = "scrape-me-9f2c"
    bare = client.get("/metrics")  # loopback, but without the token
    assert bare.status_code == 401 and bare.json()["code"] == "metrics_token_required"
    assert bare["WWW-Authenticate"].startswith("Bearer")
    wrong = client.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
    assert wrong.status_code == 401
    remote = client.get(
        "/metrics",
        REMOTE_ADDR="203.0.113.7",
        headers={"Authorization": "Bearer scrape-me-9f2c"},
    )
    assert remote.status_code == 200

    settings.MEMFLOW_METRICS = False
    assert (
        client.get("/metrics", headers={"Authorization": "Bearer scrape-me-9f2c"}).status_code
        == 404
    )


@pytest.mark.django_db
def test_queued_tasks_are_the_queue_depth(client):
    before = value(parse(client.get("/metrics").content.decode()), "memflow_queue_depth")
    async_task("math.floor", 1.5)  # no worker runs in tests: it stays queued
    async_task("math.floor", 2.5)
    after = value(parse(client.get("/metrics").content.decode()), "memflow_queue_depth")
    assert after == before + 2


def _hook_processes(server: Served, data_dir: Path) -> int:
    """How many web processes have timed a hook: each keeps its figures in files of its own."""
    shared = data_dir / "metrics" / str(server.process.pid)
    return len(list(shared.glob("histogram_*.db")))


def _scrape(server: Served) -> Samples:
    answer = httpx.get(f"{server.url}/metrics", timeout=30)
    assert answer.status_code == 200, answer.text
    return parse(answer.text)


def _scrape_counted(server: Served, *, hooks: int) -> Samples:
    """A scrape once `hooks` session starts, a stop and a 4xx are counted.

    A request is counted once its answer is sent (MetricsLayer): on a busy
    machine the last ones land just after their client has the answer.
    """
    deadline = time.monotonic() + 60
    while True:
        samples = _scrape(server)
        if (
            value(samples, "memflow_hook_duration_seconds_count", event="session-start") >= hooks
            and value(samples, "memflow_hook_duration_seconds_count", event="stop") >= 1
            and any(
                ("status", "4xx") in labels for labels in samples["memflow_http_requests_total"]
            )
        ):
            return samples
        assert time.monotonic() < deadline, "the last requests were never counted"


@pytest.mark.django_db(transaction=True)
def test_metrics_add_up_the_hooks_and_pools_of_every_web_process(tmp_path, alice, acme):
    raw = services.apikey_create(user=alice, workspace=acme).raw
    data_dir = tmp_path / "data"
    env = env_for(data_dir, database_url=database_url_for_tests())
    with serving(env, "--no-worker", "--web-workers", "2") as server:
        client = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {raw}"}, timeout=60
        )

        def hook(n: int) -> int:
            # A connection of its own each: a kept-alive one stays with the process that took it.
            return httpx.post(
                f"{server.url}/api/v1/hooks/session-start",
                json={"session_id": f"metrics-{n}", "cwd": "/srv/app"},
                headers={"Authorization": f"Bearer {raw}"},
                timeout=60,
            ).status_code

        # Until both processes have served hooks (the kernel picks which one accepts).
        sent = 0
        deadline = time.monotonic() + 120
        with ThreadPoolExecutor(4) as threads:
            while _hook_processes(server, data_dir) < 2:
                assert time.monotonic() < deadline, "one web process never got a hook"
                assert list(threads.map(hook, range(sent, sent + 4))) == [200] * 4
                sent += 4
        assert (
            client.post("/api/v1/hooks/stop", json={"session_id": "metrics-0"}).status_code == 200
        )
        assert client.get("/api/v1/workspaces/elsewhere/").status_code == 404

        samples = _scrape_counted(server, hooks=sent)
        assert value(samples, "memflow_hook_duration_seconds_count", event="session-start") == sent
        assert value(samples, "memflow_hook_duration_seconds_count", event="stop") == 1
        assert (
            value(
                samples,
                "memflow_http_requests_total",
                route="api-hook",
                method="POST",
                status="2xx",
            )
            == sent + 1
        )
        assert (
            value(
                samples,
                "memflow_http_requests_total",
                route="api-health",
                method="GET",
                status="2xx",
            )
            >= 1
        )
        not_found = [
            labels
            for labels, count in samples["memflow_http_requests_total"].items()
            if ("status", "4xx") in labels and count >= 1
        ]
        assert not_found, "the 404 was not counted"
        assert "memflow_queue_depth" in samples

        # Each process samples its own pool; a scrape adds all of them up.
        deadline = time.monotonic() + 60
        while True:
            samples = _scrape(server)
            pools = value(samples, "memflow_db_pool_max_connections")
            processes = sum(samples["memflow_embeddings_processes"].values())
            if pools == 2 * django_settings.SERVE_DB_POOL and processes == 2:
                break
            assert time.monotonic() < deadline, (pools, processes)
            time.sleep(0.5)
        assert value(samples, "memflow_db_pool_connections", state="idle") >= 1

        forwarded = httpx.get(
            f"{server.url}/metrics", headers={"X-Forwarded-For": "198.51.100.4"}, timeout=30
        )
        assert forwarded.status_code == 403
        client.close()
