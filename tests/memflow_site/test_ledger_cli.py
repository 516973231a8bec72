"""`memflow ledger` against a running server, with the hook client's settings:
injection → use rates and the hottest ids, as text and as JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from contexts.models import AgentSession, Membership
from contexts.tenancy import services as contexts_services
from memories import services
from memories.services import RememberInput
from tests.memflow_site.helpers import Account, client_env, free_port, make_account, memflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dana() -> Account:
    return make_account("dana", scope="read")


@pytest.fixture
def used_and_unused(dana: Account) -> tuple[int, int]:
    """Two memories injected into one session; the model then expanded one of them twice."""
    workspace = dana.workspace
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
    return memflow("ledger", *args, env=client_env(tmp_path, **settings), check=False)


def test_it_gives_use_rates_and_the_hottest_ids(memflow_server, dana, used_and_unused, tmp_path):
    used, unused = used_and_unused
    settings = {"MEMFLOW_URL": memflow_server.url, "MEMFLOW_API_KEY": dana.key}

    done = ledger(tmp_path, "--json", **settings)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["workspace"] == "dana"
    assert (summary["injected"], summary["used"], summary["use_rate"]) == (2, 1, 0.5)
    assert summary["by_kind"] == {"expanded": 1, "recalled": 0, "superseded": 0, "cited": 0}
    # ranked by uses, as the dashboard ranks them: the id injected and never used is not hot
    assert summary["hottest"] == [{"memory_id": used, "events": 3, "uses": 2}]

    text = ledger(tmp_path, **settings)
    assert text.returncode == 0, text.stderr
    assert "dana: 2 injected (session, id) pairs, 1 then used (50.0%)" in text.stderr
    assert "expanded 1 (50.0%)  recalled 0 (0.0%)" in text.stderr
    assert f"most used ids (uses, of all ledger events):\n  #{used}  2  3\n" in text.stderr
    assert f"#{unused}" not in text.stderr

    other = ledger(tmp_path, "--session", "cc-8", **settings)
    assert "dana, session cc-8: no memory has been injected yet" in other.stderr


def test_it_asks_which_workspace_when_the_key_can_use_several(memflow_server, dana, tmp_path):
    contexts_services.workspace_create(user=dana.user, slug="dana-side", name="Side")
    assert Membership.objects.filter(user=dana.user).count() == 2
    raw = contexts_services.apikey_create(user=dana.user, scope="read").raw
    settings = {"MEMFLOW_URL": memflow_server.url, "MEMFLOW_API_KEY": raw}
    done = ledger(tmp_path, **settings)
    assert done.returncode == 1
    assert "Say which workspace" in done.stderr and "dana, dana-side" in done.stderr
    chosen = ledger(tmp_path, "--workspace", "dana-side", "--json", **settings)
    assert json.loads(chosen.stdout)["injected"] == 0
    missing = ledger(tmp_path, "--workspace", "nope", **settings)
    assert missing.returncode == 1 and "No workspace 'nope'" in missing.stderr


def test_it_fails_clearly_on_a_wrong_key_or_no_server(memflow_server, dana, tmp_path):
    wrong = ledger(
        tmp_path,
        MEMFLOW_URL=memflow_server.url,
        MEMFLOW_API_KEY="mf_wrong",
        MEMFLOW_WORKSPACE="dana",
    )
    assert wrong.returncode == 1 and "refuses the API key" in wrong.stderr
    url = f"http://127.0.0.1:{free_port()}"
    nothing = ledger(tmp_path, MEMFLOW_URL=url, MEMFLOW_API_KEY="mf_x", MEMFLOW_WORKSPACE="dana")
    assert nothing.returncode == 1 and f"Nothing answers at {url}" in nothing.stderr
