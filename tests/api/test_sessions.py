"""Sessions through the REST API: the list with its filters, and one session's
log with each injection's blocks, reasons, memory ids and ledger marks."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from contexts.models import AgentSession, SessionEvent
from tests.dashboard.stories import SCRIPT, session_story

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
    assert recall["memories"] == [
        {"id": story.used.pk, "exists": True, "marks": ["injected", "recalled"]},
        {"id": story.unused.pk, "exists": True, "marks": ["injected"]},
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
