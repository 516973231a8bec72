"""Shared personas, as healthchecks does it: alice and bob work together in
`acme` (alice owns it, bob edits), victor only views it, and mallory has a
workspace of her own and must never see theirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.test import APIClient

from contexts.models import ApiKey, Membership, Workspace
from contexts.tenancy import services
from tests.memflow_site.helpers import (
    Served,
    database_url_for_tests,
    env_for,
    serving,
    wait_for_embeddings,
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The browser tests' failure screenshots of an earlier run go, once per run: not
    by each test worker (xdist), which would delete those another worker just saved."""
    if hasattr(session.config, "workerinput"):
        return
    for stale in (Path(__file__).parent / "browser" / "artifacts").glob("FAILED-*.png"):
        stale.unlink()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """The personas' passwords hashed in microseconds, not PBKDF2's second each.

    tests/browser restores the real hashers: a live server verifies its logins.
    """
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user("alice", password="alice-password")


@pytest.fixture
def bob(db: None) -> User:
    return User.objects.create_user("bob", password="bob-password")


@pytest.fixture
def victor(db: None) -> User:
    return User.objects.create_user("victor", password="victor-password")


@pytest.fixture
def mallory(db: None) -> User:
    return User.objects.create_user("mallory", password="mallory-password")


@pytest.fixture
def acme(alice: User, bob: User, victor: User) -> Workspace:
    workspace = services.workspace_create(user=alice, slug="acme", name="Acme Rockets")
    Membership.objects.create(user=bob, workspace=workspace, role=Membership.Role.EDITOR)
    Membership.objects.create(user=victor, workspace=workspace, role=Membership.Role.VIEWER)
    return workspace


@pytest.fixture
def evil(mallory: User) -> Workspace:
    return services.workspace_create(user=mallory, slug="evil", name="Mallory's lair")


KeyMaker = Callable[..., str]


@pytest.fixture
def make_key(db: None) -> KeyMaker:
    def make(
        user: User, scope: str = ApiKey.Scope.WRITE, workspace: Workspace | None = None
    ) -> str:
        return services.apikey_create(user=user, scope=scope, workspace=workspace).raw

    return make


ClientMaker = Callable[[str], APIClient]


@pytest.fixture
def api() -> ClientMaker:
    """An API client that authenticates with the given raw key."""

    def make(raw_key: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        return client

    return make


@pytest.fixture
def pooled(request: pytest.FixtureRequest) -> Iterator[None]:
    """This test's connections drawn from a psycopg pool, as under `memflow serve`.

    Of 3 connections unless parametrized indirectly with another size. For
    tests marked `django_db(transaction=True)`: pooled connections see only
    committed rows.
    """
    options = connection.settings_dict["OPTIONS"]
    connection.close()
    size = getattr(request, "param", 3)
    options["pool"] = {"min_size": 2, "max_size": size, "timeout": 10}
    try:
        connection.ensure_connection()
        connection.pool.wait()  # type: ignore[attr-defined]  # both open, as in a running server
        yield
    finally:
        connection.close()
        connection.close_pool()  # type: ignore[attr-defined]  # the postgresql backend's
        del options["pool"]


@pytest.fixture
def migrated_schedules(db: None) -> None:
    """The django-q schedules the migrations create, back in place: a transactional
    test's flush (on this worker, earlier) empties every table, theirs included."""
    import importlib
    import pkgutil

    from django.apps import apps

    for app in ("contexts", "memories", "skills"):
        package = importlib.import_module(f"{app}.migrations")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{app}.migrations.{info.name}")
            if hasattr(module, "add_schedule"):
                module.add_schedule(apps, None)


@pytest.fixture(scope="session")
def memflow_server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """`memflow serve` on this run's test database, its embedding model loaded: one for the
    run, shared by the CLI, MCP and harness tests. They ask for `transactional_db`, so what
    they write is committed and the server sees it; each test's flush empties it again."""
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        # `memflow serve` makes an admin on an empty database; the first
        # transactional test flushes this placeholder.
        User.objects.get_or_create(username="server-placeholder")
    env = env_for(tmp_path_factory.mktemp("memflow-server") / "data", database_url=url)
    with serving(env, "--no-worker") as server:
        wait_for_embeddings(server)
        yield server
