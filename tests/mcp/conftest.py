"""One real `memflow serve` for the MCP tests, against the test database.

The tests ask for `transactional_db`, so what they write is committed and the
server process sees it; the server reads the same database through a
`DATABASE_URL` built from the test connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.db import connection

from tests.memflow_site.helpers import Served, env_for, serving, wait_for_embeddings


def database_url_for_tests() -> str:
    """A DATABASE_URL for the database this test run uses (embedded or not)."""
    connection.ensure_connection()
    info = connection.connection.info
    settings = connection.settings_dict
    user = quote(settings["USER"] or info.user)
    password = f":{quote(settings['PASSWORD'])}" if settings["PASSWORD"] else ""
    query: dict[str, Any] = {"host": info.host}
    query.update(
        (name, value)
        for name, value in (settings.get("OPTIONS") or {}).items()
        if isinstance(value, str | int)
    )
    return f"postgresql://{user}{password}@localhost:{info.port}/{quote(info.dbname)}?{urlencode(query)}"


@pytest.fixture(scope="package")
def served(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        # `memflow serve` makes an admin on an empty database; this one is a
        # test's. The first transactional test flushes the placeholder.
        User.objects.get_or_create(username="mcp-placeholder")
    env = env_for(tmp_path_factory.mktemp("mcp") / "data", database_url=url)
    with serving(env, "--no-worker") as server:
        wait_for_embeddings(server)
        yield server


@pytest.fixture
def scratchpad_on(acme: Any) -> Any:
    """acme with its scratchpad knob on (off by default), so the scratch tools are served."""
    acme.settings = {**(acme.settings or {}), "scratchpad": True}
    acme.save(update_fields=["settings"])
    return acme
