"""Shared by the reliability suites: fast personas, and one real server.

`live` is `memflow serve` with two uvicorn workers (two processes, so two
requests really do run at once) against this run's test database. Tests that
use it ask for `transactional_db`, so what they write is committed and the
server sees it. It logs at DEBUG, so the secrets suite can search its log.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User

from tests.memflow_site.helpers import Served, database_url_for_tests, env_for, serving

WEB_WORKERS = 2


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # The personas' passwords are hashed with 1,000,000 PBKDF2 rounds otherwise:
    # over a second of setup per test on this machine, for nothing under test here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="package")
def live(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        # `memflow serve` makes an admin on an empty database; the first
        # transactional test flushes this placeholder.
        User.objects.get_or_create(username="reliability-placeholder")
    env = env_for(tmp_path_factory.mktemp("reliability") / "data", database_url=url)
    env["MEMFLOW_LOG_LEVEL"] = "DEBUG"
    with serving(env, "--no-worker", "--web-workers", str(WEB_WORKERS)) as server:
        # Every worker loads the embedding model on its own: wait until a run
        # of answers, which land on either worker, all say it is ready.
        deadline = time.monotonic() + 180
        ready = 0
        while ready < 4 * WEB_WORKERS:
            state = httpx.get(f"{server.url}/api/v1/health", timeout=10).json()["embeddings"]
            ready = ready + 1 if state == "ready" else 0
            assert time.monotonic() < deadline, "the embedding model never loaded"
            time.sleep(0.1 if ready else 0.5)
        yield server
