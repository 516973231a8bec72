"""The memory engine through REST, against Postgres and the real model."""

from __future__ import annotations

import pytest

from memories.models import InjectionEvent, Memory

BASE = "/api/v1/workspaces/acme"


@pytest.fixture
def bob_api(acme, bob, make_key, api):
    return api(make_key(bob))


def post(client, path, body):
    return client.post(f"{BASE}/{path}", body, format="json")


def test_remember_then_recall_by_meaning_and_by_identifier(bob_api):
    texts = [
        "The CI pipeline caches pip wheels under ~/.cache/pip to speed up builds.",
        "Deploys go through scripts/release.py which tags the commit and pushes to PyPI.",
        "The flaky test is test_parser_handles_unicode_BOM in tests/test_io.py.",
        "Our office dog is called Biscuit.",
    ]
    ids = [post(bob_api, "memories/", {"text": t}).json()["id"] for t in texts]
    by_meaning = post(
        bob_api, "recall/", {"query": "how do we publish a new release?", "k": 2}
    ).json()
    assert by_meaning["results"][0]["id"] == ids[1]
    by_identifier = post(
        bob_api, "recall/", {"query": "test_parser_handles_unicode_BOM", "k": 2}
    ).json()
    assert by_identifier["results"][0]["id"] == ids[2]
    first = by_identifier["results"][0]
    assert {"id", "text", "score", "age", "source", "app", "compartment"} <= set(first)


def test_a_remember_answers_what_it_did(bob_api):
    created = post(bob_api, "memories/", {"text": "Postgres 18 is the minimum supported version."})
    assert created.status_code == 201 and created.json()["outcome"] == "created"
    again = post(bob_api, "memories/", {"text": "postgres 18 is the minimum supported version"})
    assert again.status_code == 200
    assert again.json()["outcome"] == "strengthened" and again.json()["id"] == created.json()["id"]


def test_a_secret_is_refused_with_its_code(bob_api):
    response = post(
        bob_api, "memories/", {"text": "deploy with ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}
    )
    assert response.status_code == 422
    assert response.json()["code"] == "secret_detected"
    assert not Memory.objects.exists()


def test_bulk_names_the_bad_item(bob_api):
    response = post(
        bob_api, "memories/bulk/", {"items": [{"text": "fine"}, {"text": "AKIAIOSFODNN7EXAMPLE"}]}
    )
    assert response.status_code == 422
    assert response.json()["index"] == 1
    ok = post(
        bob_api,
        "memories/bulk/",
        {"items": [{"text": "one fact"}, {"text": "another fact entirely"}]},
    )
    assert ok.status_code == 200 and ok.json()["created"] == 2


def test_states_keep_one_current_value_and_a_history(bob_api):
    post(
        bob_api,
        "memories/",
        {
            "text": "Deploy target is staging-1",
            "state_key": "deploy.target",
            "state_value": "staging-1",
        },
    )
    second = post(
        bob_api,
        "memories/",
        {
            "text": "Deploy target is staging-2",
            "state_key": "deploy.target",
            "state_value": "staging-2",
        },
    ).json()
    assert len(second["superseded"]) == 1
    current = bob_api.get(f"{BASE}/states/deploy.target/").json()
    assert current["value"] == "staging-2"
    history = bob_api.get(f"{BASE}/states/deploy.target/history/").json()["results"]
    assert [h["state_value"] for h in history] == ["staging-1", "staging-2"]
    assert history[0]["valid_to"] is not None and history[0]["superseded_by"] == second["id"]
    assert bob_api.get(f"{BASE}/states/nope/").json()["code"] == "state_not_found"
    recalled = post(bob_api, "recall/", {"query": "deploy target staging"}).json()["results"]
    assert [r["text"] for r in recalled] == ["Deploy target is staging-2"]
    with_history = post(
        bob_api, "recall/", {"query": "deploy target staging", "include_superseded": True}
    ).json()
    assert len(with_history["results"]) == 2


def test_supersede_rejects_self_unknown_foreign_and_cycles(bob_api, evil, mallory, make_key, api):
    a = post(bob_api, "memories/", {"text": "The cache is Redis 6."}).json()["id"]
    b = post(bob_api, "memories/", {"text": "The cache is Valkey 8 since March."}).json()["id"]
    foreign = api(make_key(mallory)).post(
        "/api/v1/workspaces/evil/memories/", {"text": "mallory's note"}, format="json"
    )
    foreign_id = Memory.objects.get(workspace=evil).pk
    assert foreign.status_code == 201
    assert post(bob_api, f"memories/{a}/supersede/", {"by": a}).json()["code"] == "supersede_self"
    assert post(bob_api, f"memories/{a}/supersede/", {"by": 999999}).status_code == 404
    assert post(bob_api, f"memories/{a}/supersede/", {"by": foreign_id}).status_code == 404
    done = post(bob_api, f"memories/{a}/supersede/", {"by": b})
    assert done.status_code == 200 and done.json()["superseded"]["valid_to"]
    assert (
        post(bob_api, f"memories/{a}/supersede/", {"by": b}).json()["code"] == "already_superseded"
    )


def test_supersede_cycle_is_refused(acme):
    from memories import services
    from memories.services import RememberInput

    a = services.memory_remember(
        workspace=acme, item=RememberInput(text="Alpha is the first fact here.")
    ).memory
    b = services.memory_remember(
        workspace=acme, item=RememberInput(text="Beta is a different statement.")
    ).memory
    services.memory_supersede(workspace=acme, memory=a, by=b)
    # Reopen a by hand to simulate an attempt that would loop b → a → b.
    Memory.objects.filter(pk=a.pk).update(valid_to=None)
    a.refresh_from_db()
    b.refresh_from_db()
    from contexts.errors import Conflict

    with pytest.raises(Conflict) as caught:
        services.memory_supersede(workspace=acme, memory=b, by=a)
    assert caught.value.code == "supersede_cycle"


def test_recall_index_and_block_shapes(bob_api):
    for i in range(8):
        post(
            bob_api,
            "memories/",
            {
                "text": f"Service number {i} runs the worker pool for queue q{i} "
                + "and logs a lot. " * 20
            },
        )
    index = post(bob_api, "recall/", {"query": "worker pool queue", "mode": "index"}).json()
    assert len(index["block"]) <= 1200
    first = index["block"].splitlines()[0]
    assert first.startswith("#") and first.count(" | ") >= 3
    block = post(
        bob_api, "recall/", {"query": "worker pool queue", "mode": "block", "budget_chars": 1000}
    ).json()
    assert 0 < len(block["block"]) <= 1000
    assert all(
        Memory.objects.get(pk=i).text in block["block"] for i in block["ids"]
    )  # whole texts, never cut


def test_only_returned_entries_are_rehearsed(bob_api):
    ids = [
        post(bob_api, "memories/", {"text": t}).json()["id"]
        for t in ["kubernetes ingress uses nginx", "bananas are yellow fruit"]
    ]
    post(bob_api, "recall/", {"query": "kubernetes ingress", "k": 1})
    counts = dict(Memory.objects.filter(pk__in=ids).values_list("pk", "access_count"))
    assert counts == {ids[0]: 1, ids[1]: 0}


def test_consolidate_links_evidence_and_keeps_the_originals(bob_api):
    ids = [
        post(bob_api, "memories/", {"text": t}).json()["id"]
        for t in [
            "Build failed on py3.12 due to distutils",
            "Build failed again: distutils removed in 3.12",
        ]
    ]
    response = post(
        bob_api,
        "consolidate/",
        {"ids": ids, "conclusion": "Python 3.12 removed distutils; use setuptools."},
    )
    assert response.status_code == 201
    body = response.json()
    assert body["source"] == "consolidation" and body["evidence_ids"] == sorted(ids)
    assert Memory.objects.filter(pk__in=ids, valid_to__isnull=True).count() == 2
    assert post(bob_api, "consolidate/", {"ids": [ids[0]], "conclusion": "x"}).status_code == 400
    assert (
        post(bob_api, "consolidate/", {"ids": [ids[0], 987654], "conclusion": "x"}).status_code
        == 404
    )


def test_ledger_counts_injections_and_uses(bob_api):
    ids = [
        post(bob_api, "memories/", {"text": t}).json()["id"]
        for t in ["Use ruff for linting", "Use mypy for types", "Use pytest for tests"]
    ]
    post(bob_api, "ledger/", {"session": "s1", "ids": ids, "kind": "injected"})
    bob_api.get(f"{BASE}/memories/{ids[0]}/?session=s1")
    post(bob_api, "recall/", {"query": "mypy types", "k": 1, "session": "s1"})
    bob_api.get(f"{BASE}/memories/{ids[2]}/?session=other")  # not injected there: no use recorded
    summary = bob_api.get(f"{BASE}/ledger/?session=s1").json()
    assert summary["injected"] == 3
    assert summary["used"] == 2
    assert summary["by_kind"] == {"expanded": 1, "recalled": 1, "superseded": 0, "cited": 0}
    assert abs(summary["use_rate"] - 2 / 3) < 1e-3
    assert InjectionEvent.objects.filter(kind="expanded").count() == 1
    # hottest: ranked by uses, as the dashboard ranks them; the id never used is not among them
    assert [(h["memory_id"], h["uses"]) for h in summary["hottest"]] == [(ids[0], 1), (ids[1], 1)]
    by_events = bob_api.get(f"{BASE}/ledger/?session=s1&rank=events").json()["hottest"]
    assert [(h["memory_id"], h["events"], h["uses"]) for h in by_events][-1] == (ids[2], 1, 0)
    refused = bob_api.get(f"{BASE}/ledger/?rank=hot")
    assert refused.status_code == 400 and refused.json()["code"] == "invalid"


def test_forget_deletes_and_reopens_a_state_predecessor(bob_api):
    post(
        bob_api,
        "memories/",
        {"text": "Node version is 20", "state_key": "node", "state_value": "20"},
    )
    wrong = post(
        bob_api,
        "memories/",
        {"text": "Node version is 99", "state_key": "node", "state_value": "99"},
    ).json()["id"]
    assert bob_api.delete(f"{BASE}/memories/{wrong}/").status_code == 204
    assert bob_api.get(f"{BASE}/states/node/").json()["value"] == "20"
    assert bob_api.get(f"{BASE}/memories/{wrong}/").status_code == 404


def test_patch_edits_text_and_reembeds(bob_api):
    memory_id = post(bob_api, "memories/", {"text": "The logo is blue"}).json()["id"]
    before = Memory.objects.get(pk=memory_id).embedding
    response = bob_api.patch(
        f"{BASE}/memories/{memory_id}/", {"text": "The logo is green and round"}, format="json"
    )
    assert response.json()["text"] == "The logo is green and round"
    after = Memory.objects.get(pk=memory_id)
    assert before is not None and after.embedding is not None
    assert list(after.embedding) != list(before)
    assert "green" in after.lex


def test_list_filters_and_paginates(bob_api):
    for i in range(5):
        post(
            bob_api,
            "memories/",
            {
                "text": f"fact number {i} about /srv/app/config-{i}.yaml",
                "app": "dsh" if i % 2 else "claude-code",
            },
        )
    page = bob_api.get(f"{BASE}/memories/?app=dsh&limit=1").json()
    assert page["count"] == 2 and len(page["results"]) == 1
    found = bob_api.get(f"{BASE}/memories/?contains=config-3.yaml").json()
    assert [r["text"] for r in found["results"]] == ["fact number 3 about /srv/app/config-3.yaml"]


def test_stats_session_pack_conflicts_and_cleanup(bob_api):
    post(
        bob_api,
        "memories/",
        {"text": "The release branch is cut every Monday morning.", "source": "model"},
    )
    post(
        bob_api,
        "memories/",
        {"text": "Release branches get cut each Monday in the morning.", "source": "hook"},
    )
    stats = bob_api.get(f"{BASE}/stats/").json()
    assert stats["current"] == 2 and stats["by_source"] == {"hook": 1, "model": 1}
    pack = bob_api.get(f"{BASE}/session-pack/?minutes=60").json()
    # Earlier questions hold at most a third of the trail: one fact leaves the question out.
    assert [e["source"] for e in pack["trail"]] == ["model"]
    conflicts = bob_api.get(f"{BASE}/conflicts/?threshold=0.8").json()["results"]
    assert len(conflicts) == 1
    cleanup = post(bob_api, "cleanup/", {})
    assert cleanup.json()["dry_run"] is True and cleanup.json()["candidates"] == []


def test_auto_recalls_first_then_captures(bob_api):
    post(bob_api, "memories/", {"text": "Staging runs on Hetzner in Falkenstein."})
    response = post(
        bob_api, "auto/", {"query": "where does staging run?", "app": "dsh", "session": "sess-9"}
    ).json()
    assert response["recall"]["results"][0]["text"].startswith("Staging runs")
    assert response["captured"]["memory"]["source"] == "hook"
    assert response["captured"]["memory"]["session"] == "sess-9"


def test_a_viewer_can_recall_but_not_remember(acme, victor, make_key, api):
    client = api(make_key(victor))
    assert post(client, "recall/", {"query": "anything"}).status_code == 200
    assert post(client, "memories/", {"text": "x"}).status_code == 403


def test_recall_with_a_session_leaves_out_that_sessions_own_prompts(bob_api):
    post(bob_api, "auto/", {"query": "how do I rotate the staging db password?", "session": "s-1"})
    question = {"query": "what did I ask about the staging db password?"}
    own = post(bob_api, "recall/", {**question, "session": "s-1"}).json()["results"]
    other = post(bob_api, "recall/", {**question, "session": "s-2"}).json()["results"]
    assert [r["text"] for r in own] == []
    assert [r["text"] for r in other] == ["how do I rotate the staging db password?"]
