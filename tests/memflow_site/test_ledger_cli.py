"""`memflow ledger` against a running server, with the hook client's settings:
injection → use rates and the hottest ids, as text and as JSON."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from contexts import services as contexts_services
from contexts.models import AgentSession, Membership, Workspace
from memories import services
from memories.services import RememberInput
from tests.memflow_site.helpers import MEMFLOW, Served, env_for, free_port, serving
from tests.reliability.conftest import database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def live(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        User.objects.get_or_create(username="ledger-placeholder")  # flushed by the first test
    env = env_for(tmp_path_factory.mktemp("ledger-cli") / "data", database_url=url)
    with serving(env, "--no-worker") as server:
        yield server


@pytest.fixture
def dana() -> tuple[User, Workspace]:
    user = User.objects.create_user("dana", password="x")
    workspace = contexts_services.workspace_create(user=user, slug="dana", name="Dana")
    return user, workspace


@pytest.fixture
def used_and_unused(dana: tuple[User, Workspace]) -> tuple[int, int]:
    """Two memories injected into one session; the model then expanded one of them twice."""
    _, workspace = dana
    used, unused = (
        services.memory_remember(workspace=workspace, item=RememberInput(text=text)).memory.pk
        for text in ("Builds run on the arm64 runners", "The staging database is read-only")
    )
    session = AgentSession.objects.create(workspace=workspace, external_id="cc-7")
    services.ledger_record(
        workspace=workspace, session=session, memory_ids=[used, unused], kind="injected"
    )
    for _ in range(2):
        services.ledger_record(
            workspace=workspace, session=session, memory_ids=[used], kind="expanded"
        )
    return used, unused


def ledger(tmp_path: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**env_for(tmp_path / "data"), "HOME": str(home), **settings}
    env.pop("XDG_CONFIG_HOME", None)
    return subprocess.run(
        [MEMFLOW, "ledger", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_it_gives_use_rates_and_the_hottest_ids(live, dana, used_and_unused, tmp_path):
    user, workspace = dana
    raw = contexts_services.apikey_create(user=user, workspace=workspace, scope="read").raw
    used, unused = used_and_unused
    settings = {"MEMFLOW_URL": live.url, "MEMFLOW_API_KEY": raw}

    done = ledger(tmp_path, "--json", **settings)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["workspace"] == "dana"
    assert (summary["injected"], summary["used"], summary["use_rate"]) == (2, 1, 0.5)
    assert summary["by_kind"] == {"expanded": 1, "recalled": 0, "superseded": 0}
    assert [h["memory_id"] for h in summary["hottest"]] == [used, unused]
    assert summary["hottest"][0] == {"memory_id": used, "events": 3, "uses": 2}

    text = ledger(tmp_path, **settings)
    assert text.returncode == 0, text.stderr
    assert "dana: 2 injected (session, id) pairs, 1 then used (50.0%)" in text.stderr
    assert "expanded 1 (50.0%)  recalled 0 (0.0%)" in text.stderr
    assert f"  #{used}  3  2" in text.stderr

    other = ledger(tmp_path, "--session", "cc-8", **settings)
    assert "dana, session cc-8: no memory has been injected yet" in other.stderr


def test_it_asks_which_workspace_when_the_key_can_use_several(live, dana, tmp_path):
    user, _ = dana
    contexts_services.workspace_create(user=user, slug="dana-side", name="Side")
    assert Membership.objects.filter(user=user).count() == 2
    raw = contexts_services.apikey_create(user=user, scope="read").raw
    settings = {"MEMFLOW_URL": live.url, "MEMFLOW_API_KEY": raw}
    done = ledger(tmp_path, **settings)
    assert done.returncode == 1
    assert "Say which workspace" in done.stderr and "dana, dana-side" in done.stderr
    chosen = ledger(tmp_path, "--workspace", "dana-side", "--json", **settings)
    assert json.loads(chosen.stdout)["injected"] == 0
    missing = ledger(tmp_path, "--workspace", "nope", **settings)
    assert missing.returncode == 1 and "No workspace 'nope'" in missing.stderr


def test_it_fails_clearly_on_a_wrong_key_or_no_server(live, dana, tmp_path):
    wrong = ledger(
        tmp_path, MEMFLOW_URL=live.url, MEMFLOW_API_KEY="mf_wrong", MEMFLOW_WORKSPACE="dana"
    )
    assert wrong.returncode == 1 and "refuses the API key" in wrong.stderr
    url = f"http://127.0.0.1:{free_port()}"
    nothing = ledger(tmp_path, MEMFLOW_URL=url, MEMFLOW_API_KEY="mf_x", MEMFLOW_WORKSPACE="dana")
    assert nothing.returncode == 1 and f"Nothing answers at {url}" in nothing.stderr
