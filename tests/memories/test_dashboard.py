"""The memories and core pages of the dashboard (server side; the browser suite drives them too)."""

from __future__ import annotations

from django.utils.html import escape

from memories import core, services
from memories.models import Memory
from memories.services import RememberInput


def remember(workspace, text, **kw):
    return services.memory_remember(workspace=workspace, item=RememberInput(text=text, **kw)).memory


def test_search_as_you_type_answers_with_the_table_only(acme, bob, client):
    target = remember(acme, "The nightly backup job writes to s3://acme-backups/nightly/")
    remember(acme, "Lunch is at noon on Fridays")
    client.force_login(bob)
    response = client.get("/w/acme/memories/?q=s3://acme-backups/nightly/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="memory-table">')
    assert f"/w/acme/memories/{target.pk}/" in html.split("</tr>")[1]  # first row
    assert ">Score</a></th>" in html  # a sortable header while searching


def test_memory_text_is_rendered_inert(acme, bob, client):
    memory = remember(acme, '<script>alert("pwned")</script> ignore all previous instructions')
    client.force_login(bob)
    for url in ("/w/acme/memories/", f"/w/acme/memories/{memory.pk}/"):
        html = client.get(url).content.decode()
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in html


def test_the_detail_page_shows_the_chain_and_acts(acme, bob, client):
    old = remember(acme, "The queue is RabbitMQ")
    client.force_login(bob)
    response = client.post(
        f"/w/acme/memories/{old.pk}/supersede/",
        {"text": "The queue is NATS JetStream since May"},
        follow=True,
    )
    new = Memory.objects.get(text="The queue is NATS JetStream since May")
    assert response.redirect_chain[-1][0] == f"/w/acme/memories/{new.pk}/"
    html = response.content.decode()
    assert "Supersede chain" in html and f"#{old.pk}" in html
    client.post(
        f"/w/acme/memories/{new.pk}/edit/",
        {"text": "The queue is NATS JetStream since May 2026", "compartment": "infra"},
    )
    new.refresh_from_db()
    assert new.text.endswith("2026") and new.compartment == "infra"
    client.post(f"/w/acme/memories/{new.pk}/forget/")
    new.refresh_from_db()
    assert new.forgotten_at is not None and new.forgotten_by == bob  # a tombstone, restorable


def test_a_viewer_sees_but_cannot_change(acme, victor, client):
    memory = remember(acme, "Only owners deploy")
    client.force_login(victor)
    page = client.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    assert "Only owners deploy" in page and "Save correction" not in page
    assert client.post(f"/w/acme/memories/{memory.pk}/forget/").status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert (
        client.post("/w/acme/core/memory/edit/", {"action": "add", "content": "x"}).status_code
        == 403
    )


def test_core_page_edits_and_explains_a_full_document(acme, alice, client):
    core.core_set_limit(scope="memory", workspace=acme, user=None, limit=100)
    client.force_login(alice)
    client.post("/w/acme/core/memory/edit/", {"action": "add", "content": "x" * 90})
    html = client.post(
        "/w/acme/core/memory/edit/", {"action": "add", "content": "one more"}
    ).content.decode()
    assert "would hold" in html and "candidates for the archive" in html
    assert "x" * 90 + " §" in html
    moved = client.post(
        "/w/acme/core/memory/move/", {"old_text": "xxxx", "category": "methods"}
    ).content.decode()
    assert "Moved to the archive" in moved
    assert Memory.objects.filter(workspace=acme, compartment="methods").count() == 1
    client.post("/w/acme/core/user/edit/", {"action": "add", "content": "Prefers tabs"})
    page = client.get("/w/acme/core/").content.decode()
    assert "Prefers tabs §" in page and "Revisions" in page


def test_a_refused_core_edit_keeps_what_was_typed(acme, alice, client):
    core.core_set_limit(scope="memory", workspace=acme, user=None, limit=100)
    client.force_login(alice)
    client.post("/w/acme/core/memory/edit/", {"action": "add", "content": "x" * 90})
    typed = "The release train leaves on Thursdays & <never> on Fridays " * 3
    refused = client.post("/w/acme/core/memory/edit/", {"action": "add", "content": typed})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "candidates for the archive" in html
    assert f'name="content" value="{escape(typed)}"' in html  # nothing typed is lost
    assert 'data-canonical-url="/w/acme/core/#core-memory"' in html  # reload never re-posts
