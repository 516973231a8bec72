"""Sessions through the REST API: the list with its filters, and one session's
log with each injection's blocks, reasons, memory ids and ledger marks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contexts.models import AgentSession, SessionEvent
from memories import services
from memories.models import Memory
from memories.services import RememberInput
from tests.dashboard.stories import SCRIPT, remember, session_story

URL = "/api/v1/workspaces/acme/sessions/"


def _sessions(acme, alice):
    now = timezone.now()
    specs = [
        # external id, app, cwd, minutes ago, ended
        ("s-repo", "claude-code", "/src/repo", 5, False),
        ("s-repo-sub", "claude-code", "/src/repo/api", 10, True),
        ("s-other", "dsh", "/src/repository", 20, False),
        ("s-old", "dsh", "/src/repo", 60 * 24 * 3, True),
    ]
    for external_id, app, cwd, ago, ended in specs:
        session = AgentSession.objects.create(
            workspace=acme, user=alice, external_id=external_id, app=app, cwd=cwd
        )
        AgentSession.objects.filter(pk=session.pk).update(
            started_at=now - timedelta(minutes=ago),
            ended_at=now if ended else None,
        )


def _ids(response):
    assert response.status_code == 200, response.content
    return [row["session_id"] for row in response.json()["results"]]


def test_the_list_is_newest_first_and_filtered(acme, alice, bob, make_key, api):
    _sessions(acme, alice)
    client = api(make_key(bob, scope="read"))
    assert _ids(client.get(URL)) == ["s-repo", "s-repo-sub", "s-other", "s-old"]
    assert _ids(client.get(URL, {"app": "dsh"})) == ["s-other", "s-old"]
    # the directory and those below it, not a sibling that shares its prefix
    assert _ids(client.get(URL, {"directory": "/src/repo/"})) == ["s-repo", "s-repo-sub", "s-old"]
    assert _ids(client.get(URL, {"state": "open"})) == ["s-repo", "s-other"]
    assert _ids(client.get(URL, {"state": "ended", "app": "claude-code"})) == ["s-repo-sub"]
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert _ids(client.get(URL, {"since": since})) == ["s-repo", "s-repo-sub", "s-other"]


def test_the_list_pages_with_a_count(acme, alice, make_key, api):
    _sessions(acme, alice)
    client = api(make_key(alice))
    page = client.get(URL, {"limit": 2, "offset": 1}).json()
    assert page["count"] == 4 and page["limit"] == 2 and page["offset"] == 1
    assert [r["session_id"] for r in page["results"]] == ["s-repo-sub", "s-other"]
    row = page["results"][0]
    assert row["directory"] == "/src/repo/api" and row["user"] == "alice"
    assert row["open"] is False and row["ended_at"] is not None


def test_each_listed_session_has_its_counts(acme, bob, make_key, api):
    story = session_story(acme)
    row = api(make_key(bob)).get(URL).json()["results"][0]
    assert row["id"] == story.session.pk and row["session_id"] == "sess-1"
    assert (row["turns"], row["events"], row["injections"]) == (2, 8, 1)


def test_bad_filters_are_refused_with_a_code(acme, bob, make_key, api):
    client = api(make_key(bob))
    for params, code in (
        ({"limit": 0}, "invalid_page"),
        ({"limit": 201}, "limit_too_large"),
        ({"since": "yesterday"}, "invalid"),
        ({"state": "paused"}, "invalid"),
        ({"offset": -1}, "invalid_page"),
    ):
        response = client.get(URL, params)
        assert response.status_code == 400, params
        assert response.json()["code"] == code, params


def test_the_detail_tells_what_the_model_saw_and_why(acme, bob, make_key, api):
    story = session_story(acme)
    body = api(make_key(bob, scope="read")).get(f"{URL}sess-1/").json()
    assert body["session_id"] == "sess-1" and body["app"] == "claude-code"
    kinds = [e["kind"] for e in body["events"]]
    assert kinds == [
        "session-start",
        "user-prompt",
        "injection",
        "post-tool-use",
        "stop",
        "user-prompt",
        "pre-compact",
        "session-end",
    ]
    assert body["events_count"] == 8
    prompt, injection, tool = body["events"][1], body["events"][2], body["events"][3]
    assert prompt["text"] == f"Deploy it please {SCRIPT}"
    assert prompt["payload"]["prompt"] == prompt["text"]
    assert tool["tool"] == "Bash"
    assert injection["trigger"] == "user-prompt" and injection["payload"] is None
    recall, identity = injection["blocks"]
    assert recall["name"] == "memflow:recall" and recall["why"] == (
        "memories recalled for this prompt"
    )
    assert identity["why"] == "a system-prompt section from the directory's declarations"
    # recorded before injections kept why each memory ranked: said, not made up
    assert recall["ranking"] is None
    assert recall["memories"] == [
        {"id": story.used.pk, "exists": True, "marks": ["injected", "recalled"], "why": None},
        {"id": story.unused.pk, "exists": True, "marks": ["injected"], "why": None},
    ]
    ledger = {row["memory_id"]: [m["kind"] for m in row["marks"]] for row in body["ledger"]}
    assert ledger == {story.used.pk: ["injected", "recalled"], story.unused.pk: ["injected"]}
    assert body["ledger_count"] == 2


def test_the_detail_pages_its_events(acme, bob, make_key, api):
    session_story(acme)
    body = api(make_key(bob)).get(f"{URL}sess-1/", {"limit": 3, "offset": 3}).json()
    assert [e["kind"] for e in body["events"]] == ["post-tool-use", "stop", "user-prompt"]
    assert body["events_count"] == 8 and body["ledger_count"] == 2


def test_a_forgotten_memory_shows_as_gone(acme, bob, make_key, api):
    story = session_story(acme)
    story.unused.delete()
    body = api(make_key(bob)).get(f"{URL}sess-1/").json()
    memories = body["events"][2]["blocks"][0]["memories"]
    assert [m["exists"] for m in memories] == [True, False]


def test_the_users_own_document_is_shown_to_that_user_only(acme, alice, bob, make_key, api):
    session = AgentSession.objects.create(workspace=acme, user=alice, external_id="alice-1")
    SessionEvent.objects.create(
        session=session,
        kind="injection",
        payload={
            "event": "session-start",
            "blocks": [
                {"name": "memflow:core-user", "order": 50, "text": "Alice is colour-blind"},
                {"name": "memflow:core-memory", "order": 51, "text": "Deploys on Tuesdays"},
            ],
        },
    )
    for user, visible in ((alice, True), (bob, False)):
        response = api(make_key(user)).get(f"{URL}alice-1/")
        user_block, memory_block = response.json()["events"][0]["blocks"]
        assert memory_block["text"] == "Deploys on Tuesdays"
        assert user_block["withheld"] is not visible
        assert ("Alice is colour-blind" in response.content.decode()) is visible


def test_another_workspaces_session_is_not_found(acme, evil, bob, make_key, api):
    session_story(evil, external_id="their-session")
    response = api(make_key(bob)).get(f"{URL}their-session/")
    assert response.status_code == 404
    assert response.json()["code"] == "session_not_found"
    assert "Staging" not in response.content.decode()
    assert api(make_key(bob)).get(URL).json()["count"] == 0


def test_the_schema_documents_both_endpoints(alice, make_key, api):
    schema = (
        api(make_key(alice))
        .get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        .json()
    )
    listing = schema["paths"]["/api/v1/workspaces/{slug}/sessions/"]["get"]
    assert {"app", "directory", "state", "since", "limit", "offset"} <= {
        p["name"] for p in listing["parameters"]
    }
    detail = schema["paths"]["/api/v1/workspaces/{slug}/sessions/{session_id}/"]["get"]
    assert detail["operationId"] == "session_get"


# --- why each injected memory ranked, recorded by the real hook pipeline ------------------


@pytest.fixture
def hook(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))

    def call(event: str, session_id: str = "cc-1", **payload):
        body = {"session_id": session_id, "cwd": "/src/app", "hook_event_name": event, **payload}
        response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return call


def _imported(acme, text: str):
    """An entry from long ago: recall, not the new session's restore pack, brings it."""
    return services.memory_remember(
        workspace=acme,
        item=RememberInput(
            text=text, source="import", created_at=timezone.now() - timedelta(days=30)
        ),
    ).memory


def _injections(body):
    return [e for e in body["events"] if e["kind"] == "injection"]


def test_each_injected_memory_says_why_it_ranked(acme, bob, make_key, api, hook):
    fact = _imported(acme, "The payments service retries webhooks 5 times with backoff.")
    _imported(acme, "Lunch is at noon on Fridays in the big room.")
    hook("session-start", source="startup")
    hook("user-prompt", prompt="how many times do payment webhooks retry?")
    body = api(make_key(bob, scope="read")).get(f"{URL}cc-1/").json()
    injection = _injections(body)[-1]
    assert injection["trigger"] == "user-prompt" and injection["turn"] == 1
    recall = next(b for b in injection["blocks"] if b["name"] == "memflow:recall")
    assert 0 <= recall["ranking"]["lexical_weight"] <= 1 and recall["ranking"]["reason"]
    entry = next(m for m in recall["memories"] if m["id"] == fact.pk)
    why = entry["why"]
    assert why["rank"] == 1 and why["dense_rank"] == 1 and why["lexical_rank"] == 1
    assert why["score"] > 0 and why["fused"] >= why["score"]
    assert 0 < why["cosine"] <= 1 and why["bm25"] > 0 and 0 < why["retention"] <= 1
    # the prompt's words the entry holds (no stemming: "payment" is not "payments")
    # Matched through their stems (`payments`, `retries`), shown as the prompt wrote them.
    assert why["terms"] == ["times", "payment", "webhooks", "retry"]
    assert entry["marks"] == ["injected"]


def test_the_why_is_what_was_recorded_not_a_recomputation(acme, bob, make_key, api, hook):
    fact = _imported(acme, "The payments service retries webhooks 5 times with backoff.")
    hook("session-start", source="startup")
    hook("user-prompt", prompt="how many times do payment webhooks retry?")
    client = api(make_key(bob, scope="read"))
    before = client.get(f"{URL}cc-1/", {"memory": fact.pk}).json()
    # The entry changes after the fact: what the session was shown, and why, does not.
    Memory.objects.filter(pk=fact.pk).update(text="Webhooks are not retried any more.")
    after = client.get(f"{URL}cc-1/", {"memory": fact.pk}).json()
    assert _injections(after) == _injections(before)
    (block,) = [b for b in _injections(after)[0]["blocks"] if b["memories"]]
    assert block["memories"][0]["why"]["terms"] == ["times", "payment", "webhooks", "retry"]


def test_injections_carry_their_turn_and_a_startups_restore_says_so(acme, bob, make_key, api, hook):
    recent = remember(acme, "The release branch is cut on Thursdays.")
    checklist = _imported(acme, "The release checklist lives in docs/release.md.")
    hook("session-start", source="startup")
    hook("user-prompt", prompt="Let's look at the release process today please")
    # learnt meanwhile (another session's import): new to this session at its next prompt
    older = _imported(acme, "Invoices are generated by the billing cron at 02:00 UTC.")
    hook("user-prompt", prompt="when does the billing cron generate invoices?")
    body = api(make_key(bob)).get(f"{URL}cc-1/", {"kind": "injection"}).json()
    injections = _injections(body)
    assert [(e["trigger"], e["turn"]) for e in injections] == [
        ("session-start", 1),
        ("user-prompt", 1),
        ("user-prompt", 2),
    ]
    start = injections[0]
    assert start["source"] == "startup"
    restore = next(b for b in start["blocks"] if b["name"] == "memflow:restore")
    assert "compaction" not in restore["why"] and "new session" in restore["why"]
    restored = next(m for m in restore["memories"] if m["id"] == recent.pk)
    assert restored["why"]["basis"] == "recent trail" and restored["why"]["score"] is None
    given = [{m["id"] for b in e["blocks"] for m in b["memories"]} for e in injections[1:]]
    assert checklist.pk in given[0] and older.pk in given[1]


def test_the_detail_filters_by_kind_turn_and_memory(acme, bob, make_key, api, hook):
    fact = _imported(acme, "The payments service retries webhooks 5 times with backoff.")
    hook("session-start", source="startup")
    hook("user-prompt", prompt="how many times do payment webhooks retry?")
    hook("stop", last_assistant_message="Five times.")
    hook("user-prompt", prompt="and what about lunch on Fridays?")
    client = api(make_key(bob))
    by_memory = client.get(f"{URL}cc-1/", {"memory": fact.pk}).json()
    assert [(e["kind"], e["turn"]) for e in by_memory["events"]] == [("injection", 1)]
    assert by_memory["events_count"] == 1
    turn_two = client.get(f"{URL}cc-1/", {"turn": 2}).json()
    assert {e["turn"] for e in turn_two["events"]} == {2}
    assert "user-prompt" in [e["kind"] for e in turn_two["events"]]
    stops = client.get(f"{URL}cc-1/", {"kind": "stop"}).json()
    assert [e["text"] for e in stops["events"]] == ["Five times."]
    for bad in ({"turn": 0}, {"memory": "seven"}, {"kind": "x" * 65}):
        response = client.get(f"{URL}cc-1/", bad)
        assert response.status_code == 400 and response.json()["code"] == "invalid", bad
