"""Scopes hold everywhere, and private entries are counted for their author only
(issue 33, findings 4 and 8), through the real server.

A read key created a workspace (and owned it) through a hook's `project_root`
with `create_workspace: true`, where `POST workspaces/` refused it; a
viewer's read key created sessions through MCP `?session=`; a NUL in an MCP
`session_id` was an in-band `server_error`. A private entry's text never
leaked, but its existence did: `stats/` counts, cleanup totals, ledger ids
and the quota's use. `memflow export` wrote a world-readable archive.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from contexts.models import AgentSession, Workspace
from memories import services
from memories.models import InjectionEvent, Memory
from tests.mcp.client import Mcp
from tests.memflow_site.helpers import Served, database_url_for_tests, env_for, memflow

pytestmark = pytest.mark.django_db(transaction=True)

NUL_ID = "alice\x00session"


def client(server: Served, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


# --- a read key creates nothing -------------------------------------------------------


def test_a_read_key_creates_no_workspace_through_a_hook(memflow_server, acme, bob, make_key):
    reader = client(memflow_server, make_key(bob, scope="read"))
    body = {
        "session_id": "bob-new-project",
        "project_root": "/src/skunkworks",
        "create_workspace": True,
        "prompt": "set up the skunkworks build",
    }
    hooked = reader.post("/api/v1/hooks/user-prompt", json=body)
    assert (hooked.status_code, hooked.json()["code"]) == (403, "key_scope")
    direct = reader.post("/api/v1/workspaces/", json={"slug": "skunkworks"})
    assert (direct.status_code, direct.json()["code"]) == (403, "key_scope")  # the same answer
    assert list(Workspace.objects.values_list("slug", flat=True)) == ["acme"]
    assert not AgentSession.objects.exists()
    # A write key may, as `POST workspaces/` lets it.
    writer = client(memflow_server, make_key(bob, scope="write"))
    assert writer.post("/api/v1/hooks/user-prompt", json=body).status_code == 200
    created = Workspace.objects.get(slug="skunkworks")
    assert created.memberships.get().user == bob


def test_a_read_key_creates_no_session(memflow_server, acme, alice, victor, make_key):
    fact = services.memory_remember(
        workspace=acme, item=services.RememberInput(text="The staging database is pg-7.")
    ).memory
    for user in (victor, alice):  # a viewer's key, and an owner's read key
        key = make_key(user, scope="read", workspace=acme)
        connected = Mcp(f"{memflow_server.url}/mcp/?workspace=acme&session={user}-mcp", key)
        connected.ok("flymemory_recall", query="staging database")
        connected.ok("flymemory_recall", query="staging database", inject=True)
        connected.ok("flymemory_get_memory", memory_id=fact.pk)
        rest = client(memflow_server, key)
        base = "/api/v1/workspaces/acme"
        recalled = rest.post(f"{base}/recall/", json={"query": "staging", "session": f"{user}-r"})
        assert recalled.status_code == 200, recalled.text
        assert rest.get(f"{base}/memories/{fact.pk}/?session={user}-g").status_code == 200
    assert not AgentSession.objects.exists()


def test_a_nul_in_an_mcp_session_id_is_refused_with_a_code(memflow_server, acme, alice, make_key):
    acme.settings = {**(acme.settings or {}), "scratchpad": True}
    acme.save(update_fields=["settings"])
    key = make_key(alice, workspace=acme)
    mcp = Mcp(f"{memflow_server.url}/mcp/?workspace=acme", key)
    for tool, arguments in (
        ("flowctx_retrieve", {"node": "d0-1-1", "session_id": NUL_ID}),
        ("flowctx_scratch_append", {"text": "a note", "session_id": NUL_ID}),
        ("skill_get", {"name": "deploy", "session_id": NUL_ID}),
    ):
        error = mcp.error(tool, **arguments)
        assert error["code"] != "server_error", (tool, error)
    assert mcp.error("flowctx_scratch_append", text="x", session_id=NUL_ID)["code"] == (
        "invalid_session"
    )
    url = f"{memflow_server.url}/mcp/?workspace=acme&session=a%00b"
    answer = httpx.post(url, headers={"Authorization": f"Bearer {key}"}, json={}, timeout=30)
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid_session")
    assert not AgentSession.objects.exists()


# --- private entries are counted for their author only -------------------------------


@pytest.fixture
def entries(acme, alice, bob) -> dict[str, Memory]:
    """One public entry, and one bob keeps private; both injected into a session of his
    and both past their expiry (so the cleanup would take them)."""
    public = services.memory_remember(
        workspace=acme, user=alice, item=services.RememberInput(text="CI runs on the red runners.")
    ).memory
    private = services.memory_remember(
        workspace=acme,
        user=bob,
        item=services.RememberInput(text="Bob is interviewing at Initech.", private=True),
    ).memory
    session = AgentSession.objects.create(workspace=acme, user=bob, external_id="bob-1")
    services.ledger_record(
        workspace=acme,
        session=session,
        memory_ids=[public.pk, private.pk],
        kind=InjectionEvent.Kind.INJECTED,
    )
    Memory.objects.filter(pk__in=[public.pk, private.pk]).update(
        expires_at=timezone.now() - timedelta(days=1)
    )
    return {"public": public, "private": private}


def _seen_by(server: Served, key: str) -> dict[str, Any]:
    rest = client(server, key)
    base = "/api/v1/workspaces/acme"
    stats = rest.get(f"{base}/stats/").json()
    ledger = rest.get(f"{base}/ledger/?rank=events").json()
    cleanup = rest.post(f"{base}/cleanup/", json={"dry_run": True}).json()
    mcp = Mcp(f"{server.url}/mcp/?workspace=acme", key)
    return {
        "stats": stats["current"],
        "mcp stats": mcp.ok("flymemory_stats")[1]["current"],
        "injected": ledger["injected"],
        "ledger ids": {row["memory_id"] for row in ledger["hottest"]},
        "cleanup ids": {row["id"] for row in cleanup["candidates"]},
        "mcp cleanup": mcp.ok("flymemory_cleanup", dry_run=True)[0].split(".")[0],
    }


def test_another_members_private_entry_is_not_counted(
    memflow_server, entries, acme, alice, bob, make_key
):
    public, private = entries["public"].pk, entries["private"].pk
    assert _seen_by(memflow_server, make_key(alice, workspace=acme)) == {
        "stats": 1,
        "mcp stats": 1,
        "injected": 1,
        "ledger ids": {public},
        "cleanup ids": {public},
        "mcp cleanup": "Would remove 1 decayed memories",
    }
    assert _seen_by(memflow_server, make_key(bob, workspace=acme)) == {
        "stats": 2,
        "mcp stats": 2,
        "injected": 2,
        "ledger ids": {public, private},
        "cleanup ids": {public, private},
        "mcp cleanup": "Would remove 2 decayed memories",
    }


def test_a_members_cleanup_leaves_anothers_private_entry_alone(
    memflow_server, entries, acme, alice, make_key
):
    rest = client(memflow_server, make_key(alice, workspace=acme))
    done = rest.post("/api/v1/workspaces/acme/cleanup/", json={"dry_run": False}).json()
    assert done["removed"] == 1
    assert Memory.objects.get(pk=entries["public"].pk).forgotten_at is not None
    assert Memory.objects.get(pk=entries["private"].pk).forgotten_at is None  # his, for his run


def _page(user: Any, url: str) -> str:
    browser = Client()
    browser.force_login(user)
    return browser.get(url).content.decode()


def _number(pattern: str, page: str) -> int:
    found = re.search(pattern, page)
    assert found is not None, page
    return int(found.group(1))


def test_the_quota_use_on_the_settings_page_counts_them_for_their_author(entries, alice, bob):
    def memories_used(user: Any) -> int:
        return _number(r'<th scope="row">Memories</th><td>(\d+)', _page(user, "/w/acme/settings/"))

    assert memories_used(alice) == 1
    assert memories_used(bob) == 2


def test_the_dashboards_counts_and_ledger_leave_them_out(entries, alice, bob):
    private = entries["private"].pk
    for user, seen in ((alice, 1), (bob, 2)):
        overview = _page(user, "/w/acme/")
        assert _number(r"<strong>(\d+)</strong> current memor", overview) == seen
        ledger = _page(user, "/w/acme/ledger/")
        assert _number(r"<strong>(\d+)</strong> injected \(session, memory\) pairs", ledger) == seen
        assert (f"#{private}<" in ledger) == (user == bob)


# --- exports ---------------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, whatever the test runner's: what made exports 0644."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_an_export_is_readable_by_its_owner_only(entries, tmp_path, umask_022):
    env = env_for(tmp_path / "data", database_url=database_url_for_tests())
    archive = tmp_path / "acme.tar.gz"
    archive.write_bytes(b"an older export, once world-readable")
    archive.chmod(0o644)
    memflow(
        "export", "archive", "--workspace", "acme", "--user", "bob", "--out", str(archive), env=env
    )
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert archive.stat().st_size > 100  # the new archive, whole
    core = tmp_path / "USER.md"
    memflow(
        "export", "core", "--workspace", "acme", "--target", "user", "--user", "bob",
        "--out", str(core), env=env,
    )  # fmt: skip
    assert stat.S_IMODE(core.stat().st_mode) == 0o600
    assert not list(tmp_path.glob("*.partial"))
