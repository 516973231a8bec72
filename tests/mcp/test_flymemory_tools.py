"""FlyMemory's tools through the endpoint: remember, recall, lineage, upkeep, ledger."""

from __future__ import annotations

import pytest

from contexts.models import AgentSession, AuditEvent
from memories.models import InjectionEvent, Memory, MemoryEvidence
from tests.mcp.client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(served, acme, alice, make_key) -> Mcp:
    return Mcp(f"{served.url}/mcp/?workspace=acme&app=dsh", make_key(alice))


def test_it_remembers_and_recalls_with_ids(client, acme):
    text, stored = client.ok(
        "flymemory_remember",
        text="The payments service retries webhooks five times with exponential backoff",
        tags="payments, webhooks",
        compartment="Decisions",
    )
    memory = Memory.objects.get(pk=stored["id"])
    assert text.startswith(f"[NEW #{memory.pk}] The payments service")
    assert stored["outcome"] == "created" and stored["memory"]["app"] == "dsh"
    assert (memory.app, memory.source, memory.compartment) == ("dsh", "model", "decisions")
    assert memory.metadata["tags"] == ["payments", "webhooks"]

    again, repeat = client.ok(
        "flymemory_remember",
        text="The payments service retries webhooks five times with exponential backoff",
        compartment="decisions",
    )
    assert repeat["outcome"] == "strengthened" and repeat["id"] == memory.pk
    assert "(existing entry updated in place)" in again

    text, found = client.ok("flymemory_recall", query="how often are payment webhooks retried?")
    assert found["ids"][0] == memory.pk and found["results"][0]["text"] == memory.text
    assert text.startswith(f"[#{memory.pk} | active | score=")
    assert "src=model:dsh" in text
    memory.refresh_from_db()
    assert memory.access_count >= 1  # recall rehearses what it returns

    index, listing = client.ok("flymemory_recall_index", query="payment webhook retries")
    assert index.startswith(f"#{memory.pk} | ") and listing["ids"] == [memory.pk]

    block, full = client.ok("flymemory_recall_block", query="webhook retries", budget_chars=500)
    assert memory.text in block and full["mode"] == "block"

    body, detail = client.ok("flymemory_get_memory", memory_id=memory.pk)
    assert body.endswith("\n" + memory.text) and detail["id"] == memory.pk

    nothing, _ = client.ok("flymemory_recall", query="zebra migration patterns", compartment="x")
    assert nothing == "No relevant memories found."


def test_tags_as_a_list_with_comp_and_app_tags_as_flymemory_writes_them(client, acme):
    _, stored = client.ok(
        "flymemory_remember",
        text="The flaky integration test is test_ledger_rollup; it races the worker",
        tags=["comp:lessons", "app:codex", "ci"],
    )
    memory = Memory.objects.get(pk=stored["id"])
    assert (memory.compartment, memory.app) == ("lessons", "codex")
    assert memory.metadata["tags"] == ["ci"]


def test_states_supersede_and_history(client, acme):
    _, first = client.ok(
        "flymemory_remember",
        text="Production deploys run from the Jenkins box in Frankfurt",
        state_key="deploy.runner",
        state_value="jenkins-fra",
    )
    _, second = client.ok(
        "flymemory_remember",
        text="Production deploys now run on GitHub Actions runners",
        state_key="deploy.runner",
        state_value="gha",
    )
    assert second["superseded"] == [first["id"]]

    text, current = client.ok("flymemory_state_lookup", state_key="deploy.runner")
    assert text.startswith("[deploy.runner] CURRENT: Production deploys now run on GitHub")
    assert current["value"] == "gha" and current["memory"]["id"] == second["id"]

    text, history = client.ok("flymemory_state_history", state_key="deploy.runner")
    assert [m["id"] for m in history["history"]] == [first["id"], second["id"]]
    assert f"superseded by #{second['id']}" in text and "CURRENT" in text.splitlines()[-1]

    missing = client.error("flymemory_state_lookup", state_key="no.such.key")
    assert missing["code"] == "state_not_found"

    _, old = client.ok("flymemory_remember", text="The team standup is at 9:30 in room Kepler")
    _, new = client.ok("flymemory_remember", text="Standups moved to 10:00, held on Zoom now")
    # Named as every tool names the memory it acts on (memory_id) …
    text, answer = client.ok("flymemory_supersede", memory_id=old["id"], new_memory_id=new["id"])
    assert text == f"[SUPERSEDED] #{old['id']} -> #{new['id']} (excluded from default recall)"
    assert answer["superseded"]["superseded_by"] == new["id"]
    # … or by its former name, which existing callers use.
    again = client.error("flymemory_supersede", old_memory_id=old["id"], new_memory_id=new["id"])
    assert again["code"] == "already_superseded"
    neither = client.error("flymemory_supersede", new_memory_id=new["id"])
    assert neither["code"] == "memory_id_required"

    _, recalled = client.ok("flymemory_recall", query="when is the team standup", top_k=10)
    assert old["id"] not in recalled["ids"]
    _, history_recall = client.ok(
        "flymemory_recall", query="when is the team standup", include_superseded=True
    )
    assert old["id"] in history_recall["ids"]


def test_consolidate_keeps_the_evidence_and_forget_leaves_a_tombstone(client, acme):
    ids = [
        client.ok("flymemory_remember", text=text)[1]["id"]
        for text in (
            "The search cluster ran out of heap during the March reindex",
            "Reindexing the catalogue needs the search heap raised to 8 GB",
        )
    ]
    text, conclusion = client.ok(
        "flymemory_consolidate",
        memory_ids=ids,
        conclusion="Raise the search heap to 8 GB before any full reindex",
    )
    assert text.startswith(f"[CONSOLIDATED -> #{conclusion['id']}] evidence: {ids}")
    assert conclusion["source"] == "consolidation" and conclusion["evidence_ids"] == sorted(ids)
    assert set(
        MemoryEvidence.objects.filter(conclusion_id=conclusion["id"]).values_list(
            "evidence_id", flat=True
        )
    ) == set(ids)
    assert Memory.objects.get(pk=conclusion["id"]).app == "dsh"
    too_few = client.error("flymemory_consolidate", memory_ids=[ids[0]], conclusion="x y z")
    assert too_few["code"] == "invalid"

    text, _ = client.ok("flymemory_forget", memory_id=ids[0])
    assert text.startswith(f"[FORGOT #{ids[0]}] The search cluster")
    tomb = Memory.objects.get(pk=ids[0])
    assert tomb.forgotten_at is not None and tomb.forgotten_by is not None
    assert tomb.forgotten_by.username == "alice"
    assert client.error("flymemory_get_memory", memory_id=ids[0])["code"] == "memory_not_found"
    assert client.error("flymemory_forget", memory_id=ids[0])["code"] == "memory_not_found"
    event = AuditEvent.objects.get(action="memory.forget")
    assert event.user is not None
    assert (event.origin, event.user.username, event.key is not None) == ("mcp", "alice", True)


def test_the_upkeep_tools_answer(client, acme):
    client.ok("flymemory_remember", text="Grafana dashboards live in the ops-observability repo")
    text, _ = client.ok("flymemory_find_conflicts", min_sim=0.9, limit=5)
    assert text == "No contradiction candidates found."
    text, insights = client.ok("flymemory_insights")
    assert text.startswith("CONTRADICTION CANDIDATES: 0") and insights["fading"] == []
    text, report = client.ok("flymemory_cleanup", dry_run=True)
    assert text.startswith("Would remove 0") and report["dry_run"] is True
    text, pack = client.ok("flymemory_session_pack", minutes=60)
    assert "RECENT TRAIL (last 60 min)" in text and "Grafana dashboards" in text
    assert [e["app"] for e in pack["trail"]] == ["dsh"]
    text, stats = client.ok("flymemory_stats")
    assert text.startswith("Memories: 1 current") and "Apps: dsh=1" in text
    assert stats["by_app"] == {"dsh": 1}
    assert client.error("flymemory_find_conflicts", min_sim=0.1)["code"] == "invalid"


def test_the_ledger_sees_what_a_session_used(client, acme):
    _, used = client.ok("flymemory_remember", text="The mobile app's minimum iOS version is 16.4")
    _, successor = client.ok(
        "flymemory_remember", text="Since the spring release the mobile app requires iOS 17"
    )
    _, injected = client.ok(
        "flymemory_recall_block",
        query="minimum iOS version of the mobile app",
        session_id="dsh-ledger-1",
        inject=True,
    )
    assert used["id"] in injected["ids"]
    client.ok("flymemory_get_memory", memory_id=used["id"], session_id="dsh-ledger-1")
    client.ok("flymemory_recall", query="mobile app iOS version", session_id="dsh-ledger-1")
    client.ok(
        "flymemory_supersede",
        old_memory_id=used["id"],
        new_memory_id=successor["id"],
        session_id="dsh-ledger-1",
    )
    session = AgentSession.objects.get(workspace=acme, external_id="dsh-ledger-1")
    assert session.app == "dsh"
    kinds = set(
        InjectionEvent.objects.filter(session=session, memory_id=used["id"]).values_list(
            "kind", flat=True
        )
    )
    assert kinds == {"injected", "expanded", "recalled", "superseded"}


def test_the_session_can_come_from_the_url(served, acme, alice, make_key):
    client = Mcp(f"{served.url}/mcp/?workspace=acme&session=from-url", make_key(alice))
    _, stored = client.ok("flymemory_remember", text="Feature flags are managed in Unleash")
    memory = Memory.objects.select_related("session").get(pk=stored["id"])
    assert memory.session is not None and memory.session.external_id == "from-url"


def test_a_settled_conflict_is_not_found_again(client, acme):
    ids = sorted(
        client.ok("flymemory_remember", text=text)[1]["id"]
        for text in (
            "The release branch is cut every Monday morning.",
            "Release branches get cut each Monday in the morning.",
        )
    )
    text, _ = client.ok("flymemory_find_conflicts", min_sim=0.8)
    assert text.startswith("CONFLICT CANDIDATES: 1") and f"#{ids[0]} <-> #{ids[1]}" in text
    assert client.error("conflict_settle", memory_ids=ids, decision="merge")["code"] == "invalid"
    text, settled = client.ok("conflict_settle", memory_ids=ids, decision="dismiss")
    assert text == f"[SETTLED #{ids[0]}, #{ids[1]}: dismiss]"
    assert settled["cluster"] == f"{ids[0]}-{ids[1]}" and settled["holds"] is None
    text, _ = client.ok("flymemory_find_conflicts", min_sim=0.8)
    assert text == "No contradiction candidates found."
    event = AuditEvent.objects.get(action="triage.dismiss")
    assert (event.origin, event.detail["ids"]) == ("mcp", ids)
