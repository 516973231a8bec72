"""Workspace settings: knobs with typed fields, members and roles; owners only."""

from __future__ import annotations

from contexts.models import Membership


def _row(html: str, name: str) -> str:
    return html.split(f'id="knob-{name}"')[1].split("</tr>")[0]


def test_everyone_sees_the_knobs_grouped_and_in_words(acme, victor, as_user):
    acme.settings = {"decay_tau_days": 45.0, "scratchpad": True, "max_text_chars": 50000}
    acme.save()
    html = as_user(victor).get("/w/acme/settings/").content.decode()
    sections = [
        "Recall in prompts",
        "Recall through the API and MCP",
        "Remembering and forgetting",
        "Core memory",
        "Long tool results",
        "Handoff notes",
        "Scratchpad",
        "Writing skills",
    ]
    assert all(f"<legend>{title}</legend>" in html for title in sections)
    positions = [html.index(f"<legend>{title}</legend>") for title in sections]
    assert positions == sorted(positions)
    row = _row(html, "max_text_chars")
    assert "Longest memory" in row and "50,000 characters" in row and "set here" in row
    assert "20,000 characters" in row and "100 to 1,000,000" in row and "2e+04" not in html
    assert "45 days" in _row(html, "decay_tau_days")
    recall = _row(html, "hook_recall_k")
    assert "Memories recalled per prompt" in recall and "12 memories" in recall
    assert "the default" in recall and "<code>hook_recall_k</code>" in recall
    assert "save it automatically" in _row(html, "skills_generation")
    assert "only an owner can change them" in html
    assert "Save settings" not in html and 'name="username"' not in html
    assert "/keys/" in html


def test_an_owner_changes_and_resets_knobs(acme, alice, as_user):
    client = as_user(alice)
    response = client.post(
        "/w/acme/settings/",
        {"action": "settings", "decay_tau_days": "45", "scratchpad": "on", "summaries": "off",
         "max_text_chars": "50,000", "skills_generation": "confirm"},
        follow=True,
    )  # fmt: skip
    html = response.content.decode()
    assert (
        "Saved: Forgetting time, Longest memory, Write handoff notes, Give the model a scratchpad, When a turn is worth a skill."
        in html
    )
    acme.refresh_from_db()
    assert acme.settings["decay_tau_days"] == 45.0 and acme.settings["scratchpad"] is True
    assert acme.settings["summaries"] is False and acme.settings["max_text_chars"] == 50_000
    assert acme.settings["skills_generation"] == "confirm"
    assert 'value="50,000"' in _row(html, "max_text_chars")  # shown as it was typed
    client.post("/w/acme/settings/", {"action": "settings", "scratchpad": "on"})
    acme.refresh_from_db()
    assert "decay_tau_days" not in acme.settings and "summaries" not in acme.settings


def test_a_refusal_says_why_in_words_and_keeps_what_was_typed(acme, alice, as_user):
    response = as_user(alice).post(
        "/w/acme/settings/",
        {"action": "settings", "decay_tau_days": "45", "cleanup_threshold": "2",
         "summary_keep_turns": "1.5", "hook_recall_k": "lots"},
    )  # fmt: skip
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was saved" in html
    assert (
        "Cleanup threshold (cleanup_threshold) takes a number from 0 to 1; 2 is out of bounds."
        in html
    )
    assert "takes a whole number of turns from 0 to 1,000; 1.5 is not whole." in html
    assert (
        "Memories recalled per prompt takes a whole number of memories from 1 to 100; “lots” is not a number."
        in html
    )
    assert 'value="45"' in _row(html, "decay_tau_days") and 'value="lots"' in _row(
        html, "hook_recall_k"
    )
    assert 'id="knob-cleanup_threshold" class="invalid"' in html
    assert 'href="#id_hook_recall_k"' in html  # the summary links to the field
    acme.refresh_from_db()
    assert "decay_tau_days" not in acme.settings


def test_the_embedder_is_shown_but_not_edited_here(acme, alice, as_user):
    html = as_user(alice).get("/w/acme/settings/").content.decode()
    row = _row(html, "embedder")
    assert "Embedding model" in row and "English (MiniLM)" in row and "not changed here" in row
    assert "changed on the Embedder page, which re-embeds" in row
    response = as_user(alice).post("/w/acme/settings/", {"action": "settings", "embedder": "x"})
    acme.refresh_from_db()
    assert "embedder" not in acme.settings and response.status_code == 302


def test_an_owner_manages_members_and_cannot_lose_the_last_owner(acme, alice, mallory, as_user):
    client = as_user(alice)
    client.post(
        "/w/acme/settings/", {"action": "member-set", "username": "mallory", "role": "viewer"}
    )
    assert Membership.objects.get(user=mallory, workspace=acme).role == "viewer"
    client.post(
        "/w/acme/settings/", {"action": "member-set", "username": "mallory", "role": "editor"}
    )
    assert Membership.objects.get(user=mallory, workspace=acme).role == "editor"
    client.post("/w/acme/settings/", {"action": "member-remove", "username": "mallory"})
    assert not Membership.objects.filter(user=mallory, workspace=acme).exists()
    refused = client.post(
        "/w/acme/settings/", {"action": "member-set", "username": "alice", "role": "viewer"}
    )
    assert refused.status_code == 400 and "at least one owner" in refused.content.decode()
    unknown = client.post(
        "/w/acme/settings/", {"action": "member-set", "username": "nobody", "role": "viewer"}
    )
    assert "No user" in unknown.content.decode()  # fmt: skip


def test_editors_and_viewers_are_refused_every_change(acme, bob, victor, as_user):
    for user in (bob, victor):
        client = as_user(user)
        for data in (
            {"action": "settings", "decay_tau_days": "1"},
            {"action": "member-set", "username": "bob", "role": "owner"},
            {"action": "member-remove", "username": "alice"},
        ):
            response = client.post("/w/acme/settings/", data)
            assert response.status_code == 403
            assert b"Only an owner" in response.content or b"Viewers cannot" in response.content
    acme.refresh_from_db()
    assert acme.settings == {} and Membership.objects.filter(workspace=acme).count() == 3


def test_an_outsider_gets_404_for_every_method(acme, mallory, as_user):
    client = as_user(mallory)
    for method in ("get", "post", "put", "delete"):
        assert getattr(client, method)("/w/acme/settings/").status_code == 404
