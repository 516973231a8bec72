"""Workspace settings: knobs with typed fields, members and roles; owners only."""

from __future__ import annotations

from contexts.models import Membership


def test_everyone_sees_the_knobs_in_force(acme, victor, as_user):
    acme.settings = {"decay_tau_days": 45.0, "scratchpad": True}
    acme.save()
    html = as_user(victor).get("/w/acme/settings/").content.decode()
    row = html.split("<code>decay_tau_days</code>")[1].split("</tr>")[0]
    assert "<td>45</td>" in row and "(default)" not in row
    assert "<code>recall_block_chars</code>" in html and "6000" in html
    assert "only an owner can change them" in html
    assert "Save settings" not in html and 'name="username"' not in html
    assert "/keys/" in html


def test_an_owner_changes_and_resets_knobs(acme, alice, as_user):
    client = as_user(alice)
    response = client.post(
        "/w/acme/settings/",
        {"action": "settings", "decay_tau_days": "45", "scratchpad": "on", "summaries": "off"},
        follow=True,
    )
    assert "Saved: decay_tau_days, summaries, scratchpad." in response.content.decode()
    acme.refresh_from_db()
    assert acme.settings["decay_tau_days"] == 45.0 and acme.settings["scratchpad"] is True
    assert acme.settings["summaries"] is False
    client.post("/w/acme/settings/", {"action": "settings", "scratchpad": "on"})
    acme.refresh_from_db()
    assert "decay_tau_days" not in acme.settings and "summaries" not in acme.settings


def test_values_are_type_checked_and_nothing_is_half_saved(acme, alice, as_user):
    response = as_user(alice).post(
        "/w/acme/settings/",
        {"action": "settings", "decay_tau_days": "45", "cleanup_threshold": "2", "summary_keep_turns": "1.5"},
    )  # fmt: skip
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was saved" in html
    assert "less than or equal to 1" in html and "Enter a whole number" in html
    acme.refresh_from_db()
    assert "decay_tau_days" not in acme.settings


def test_the_embedder_is_shown_but_not_edited_here(acme, alice, as_user):
    html = as_user(alice).get("/w/acme/settings/").content.decode()
    if "<code>embedder</code>" in html:  # present once the embedder choice lands
        assert "not changed here" in html.split("<code>embedder</code>")[1].split("</tr>")[0]
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
