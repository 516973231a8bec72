"""The dashboard's answers to "who changed this?" and "what needs my attention?"."""

from __future__ import annotations

from django.utils.html import escape

from contexts.models import AuditEvent
from memories import services
from memories.models import CoreRevision, Memory, TriageDecision
from tests.dashboard.stories import remember


def _near_copies(acme):
    """Three current memories that say one thing three ways (each corrected
    from an unrelated text, so remember's dedupe does not fold them)."""
    texts = [
        "The release branch is cut every Monday morning.",
        "The release branch gets cut every Monday morning.",
        "The release branch is cut each Monday morning.",
    ]
    first = remember(acme, texts[0])
    rest = [
        services.memory_update(
            workspace=acme, memory=remember(acme, f"Unrelated note number {i}"), text=t
        )
        for i, t in enumerate(texts[1:])
    ]
    return [first, *rest]


def test_three_near_copies_are_one_cluster_and_keep_both_settles_it_for_good(acme, bob, as_user):
    memories = _near_copies(acme)
    client = as_user(bob)
    page = client.get("/w/acme/triage/").content.decode()
    assert page.count('<article class="cluster"') == 1  # not three pair rows
    ids = " ".join(str(m.pk) for m in sorted(memories, key=lambda m: m.pk))
    assert f'name="ids" value="{ids}"' in page
    response = client.post(
        "/w/acme/triage/conflict/", {"ids": ids, "decision": "keep_both"}, follow=True
    )
    assert "Kept both" in response.content.decode()
    assert "No conflicting memories are waiting." in client.get("/w/acme/triage/").content.decode()
    assert TriageDecision.objects.filter(decision="keep_both").count() == 3  # every pair
    assert Memory.objects.filter(valid_to__isnull=True).count() == 3  # nothing else changed
    event = AuditEvent.objects.get(action="triage.keep_both")
    assert (event.user, event.origin) == (bob, "dashboard")


def test_consolidating_a_cluster_takes_it_off_the_queue(acme, bob, as_user):
    memories = _near_copies(acme)
    client = as_user(bob)
    ids = " ".join(str(m.pk) for m in memories)
    client.post(
        "/w/acme/triage/conflict/",
        {"ids": ids, "decision": "consolidate", "conclusion": "Release branch: Mondays, a.m."},
    )
    conclusion = Memory.objects.get(source="consolidation")
    assert conclusion.app == ""  # the interface is the audit row's origin, not an app
    assert "No conflicting memories are waiting." in client.get("/w/acme/triage/").content.decode()
    assert "No conflicting memories found." in client.get("/w/acme/").content.decode()
    # consolidated elsewhere (the API), the same: the shared conclusion settles the pair
    assert services.memory_conflict_resolve is not None


def test_a_consolidation_made_through_the_api_also_settles_the_pair(acme, bob, as_user):
    a, b, c = _near_copies(acme)
    services.memory_consolidate(workspace=acme, ids=[a.pk, b.pk, c.pk], conclusion="Mondays.")
    assert (
        "No conflicting memories are waiting."
        in as_user(bob).get("/w/acme/triage/").content.decode()
    )


def test_supersede_keeps_the_chosen_one(acme, bob, as_user):
    memories = _near_copies(acme)
    keep = memories[1]
    as_user(bob).post(
        "/w/acme/triage/conflict/",
        {"ids": " ".join(str(m.pk) for m in memories), "decision": "supersede", "keep": keep.pk},
    )
    assert list(Memory.objects.filter(valid_to__isnull=True)) == [keep]
    assert set(Memory.objects.exclude(pk=keep.pk).values_list("superseded_by", flat=True)) == {
        keep.pk
    }


def test_a_viewer_sees_the_queue_but_cannot_settle_it(acme, victor, as_user):
    memories = _near_copies(acme)
    client = as_user(victor)
    assert "Settle this group" not in client.get("/w/acme/triage/").content.decode()
    ids = " ".join(str(m.pk) for m in memories)
    assert (
        client.post("/w/acme/triage/conflict/", {"ids": ids, "decision": "dismiss"}).status_code
        == 403
    )
    assert not TriageDecision.objects.exists()


def test_a_fading_memory_kept_is_pinned_and_leaves_the_queue(acme, bob, as_user):
    memory = remember(acme, "Use uv for the lock file")
    Memory.objects.filter(pk=memory.pk).update(
        last_accessed=memory.last_accessed.replace(year=memory.last_accessed.year - 2)
    )
    client = as_user(bob)
    assert f'id="fading-{memory.pk}"' in client.get("/w/acme/triage/").content.decode()
    client.post("/w/acme/triage/fading/", {"id": memory.pk, "decision": "keep"})
    assert Memory.objects.get(pk=memory.pk).pinned
    assert f'id="fading-{memory.pk}"' not in client.get("/w/acme/triage/").content.decode()


def test_a_memory_page_shows_who_changed_it_and_a_forgotten_one_its_tombstone(
    acme, alice, bob, as_user
):
    memory = remember(acme, "The logo is blue")
    client = as_user(bob)
    client.post(
        f"/w/acme/memories/{memory.pk}/edit/", {"text": "The logo is green", "compartment": ""}
    )
    page = client.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    history = page.split('id="audit"')[1]
    assert "bob" in history and "memory.edit" in history and "Dashboard" in history
    assert "The logo is blue" in history and "The logo is green" in history
    client.post(f"/w/acme/memories/{memory.pk}/forget/", {"reason": "wrong colour"})
    tomb = client.get(f"/w/acme/memories/{memory.pk}/")
    assert tomb.status_code == 200
    html = tomb.content.decode()
    assert "Forgotten" in html and "wrong colour" in html and ">Restore</button>" in html
    assert "Purge now" not in html  # bob is an editor; purging is for owners
    assert memory.pk not in [
        m.pk for m in Memory.objects.filter(valid_to__isnull=True, forgotten_at__isnull=True)
    ]
    client.post(f"/w/acme/memories/{memory.pk}/restore/")
    assert Memory.objects.get(pk=memory.pk).is_current
    owner = as_user(alice)
    assert "Purge now" not in owner.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    owner.post(f"/w/acme/memories/{memory.pk}/forget/", {"reason": ""})
    assert "Purge now" in owner.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    owner.post(f"/w/acme/memories/{memory.pk}/purge/")
    purged = owner.get(f"/w/acme/memories/{memory.pk}/")
    assert purged.status_code == 404 and "purged" in purged.content.decode()
    assert "The logo is" not in purged.content.decode()


def test_an_editor_cannot_purge(acme, bob, as_user):
    memory = remember(acme, "A fact")
    services.memory_forget(workspace=acme, memory=memory)
    assert as_user(bob).post(f"/w/acme/memories/{memory.pk}/purge/").status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_the_activity_page_filters_by_who_what_and_from_where(acme, alice, bob, as_user):
    memory = remember(acme, "Builds run on two cores")
    client = as_user(bob)
    client.post(f"/w/acme/memories/{memory.pk}/edit/", {"text": "Builds run on four cores"})
    client.post("/w/acme/core/memory/revert/", {"version": "0"})  # refused: no such revision
    as_user(alice).post(
        "/w/acme/core/memory/edit/", {"action": "add", "content": "Ship on Tuesdays"}
    )
    revision = CoreRevision.objects.get(action="add")
    assert revision.user == alice  # not "—": the shared document records its writer
    client = as_user(bob)

    def table(query: str) -> str:
        page = client.get(f"/w/acme/activity/{query}").content.decode()
        return page.split('id="activity-table"')[1]

    everything = table("")
    assert "<code>memory.edit</code>" in everything and "<code>core.add</code>" in everything
    only_bob = table("?user=bob")
    assert "<code>memory.edit</code>" in only_bob and "core.add" not in only_bob
    only_core = table("?action=core")
    assert "<code>core.add</code>" in only_core and "memory.edit" not in only_core
    assert "No change matches these filters." in table("?origin=rest")
    # the HTMX request gets the table alone
    fragment = client.get("/w/acme/activity/?user=bob", headers={"HX-Request": "true"})
    assert fragment.content.decode().lstrip().startswith('<div id="activity-table"')


def test_a_refused_settle_shows_the_form_as_typed(acme, bob, as_user):
    memories = _near_copies(acme)
    ids = " ".join(str(m.pk) for m in sorted(memories, key=lambda m: m.pk))
    typed = "Release branches: Mondays <b>before</b> standup"
    response = as_user(bob).post(
        "/w/acme/triage/conflict/", {"ids": ids, "conclusion": typed, "keep": memories[1].pk}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Choose what to do with these memories." in page
    assert f'rows="2">{escape(typed)}</textarea>' in page
    assert f'<option value="{memories[1].pk}" selected>' in page
    assert not TriageDecision.objects.exists()
    again = as_user(bob).post(
        "/w/acme/triage/conflict/", {"ids": ids, "decision": "consolidate", "conclusion": " "}
    )
    assert again.status_code == 400
    assert 'value="consolidate" required checked>' in again.content.decode()
