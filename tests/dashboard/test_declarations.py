"""Declarations and documents: list, edit with errors at their line, preview an assembly."""

from __future__ import annotations

from contexts.models import ContextDocument, Declaration, SessionEvent
from contexts.tenancy import services
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT


def store_project(workspace):
    declaration, _ = services.declaration_store(
        workspace=workspace,
        directory="/srv/app",
        source_text="systemPrompt:\n  - AGENT.md\npreload:\n  - notes.md\n",
    )
    services.context_documents_store(
        workspace=workspace,
        documents=[
            ("/srv/app/AGENT.md", f"You are the rocket agent. {SCRIPT}\n"),
            ("/srv/app/notes.md", "day 1: launched\n"),
        ],
    )
    return declaration


def test_an_empty_workspace_explains_how_declarations_arrive(acme, bob, as_user):
    html = as_user(bob).get("/w/acme/declarations/").content.decode()
    assert "No declarations are stored" in html and "memflow context push" in html
    assert "No documents are stored yet." in html


def test_it_lists_declarations_and_documents(acme, bob, as_user):
    declaration = store_project(acme)
    html = as_user(bob).get("/w/acme/declarations/").content.decode()
    assert f"/w/acme/declarations/{declaration.pk}/" in html
    assert "/srv/app/AGENT.md" in html and "/srv/app/notes.md" in html


def test_a_new_declaration_is_stored_and_a_bad_one_is_shown_at_its_line(acme, bob, as_user):
    client = as_user(bob)
    bad = client.post(
        "/w/acme/declarations/",
        {
            "kind": "declaration",
            "new-directory": "/srv/api",
            "new-source_text": "systemPrompt:\n  - A.md\n  -\n",
        },
    )
    assert bad.status_code == 400
    html = bad.content.decode()
    fault = html.split('class="at-fault" id="line-3"')[1].split("</li>")[0]
    assert "Line 3:" in fault and ".dsh/context.yaml:3" not in fault
    assert not Declaration.objects.exists()
    good = client.post(
        "/w/acme/declarations/",
        {"kind": "declaration", "new-directory": "/srv/api/", "new-source_text": "inherit: yes\n"},
    )
    declaration = Declaration.objects.get()
    assert good["Location"] == f"/w/acme/declarations/{declaration.pk}/"
    assert declaration.directory == "/srv/api" and declaration.inherit


def test_editing_shows_the_error_at_its_line_and_keeps_the_stored_text(acme, bob, as_user):
    declaration = store_project(acme)
    client = as_user(bob)
    url = f"/w/acme/declarations/{declaration.pk}/"
    response = client.post(url, {"action": "save", "source_text": "preload:\n  - [a, b]\n"})
    assert response.status_code == 400
    assert 'id="line-2" aria-invalid="true"' in response.content.decode()
    declaration.refresh_from_db()
    assert declaration.preload == ["notes.md"]
    client.post(url, {"action": "save", "source_text": "preload: [other.md]\n"})
    declaration.refresh_from_db()
    assert declaration.preload == ["other.md"] and declaration.directory == "/srv/app"
    client.post(url, {"action": "delete"})
    assert not Declaration.objects.exists()


def test_documents_are_added_edited_and_shown_inert(acme, bob, as_user):
    client = as_user(bob)
    client.post(
        "/w/acme/declarations/",
        {"kind": "document", "doc-path": "/srv/app/AGENT.md", "doc-content": SCRIPT},
    )
    document = ContextDocument.objects.get()
    url = f"/w/acme/documents/{document.pk}/"
    html = client.get(url).content.decode()
    assert ESCAPED_SCRIPT in html and SCRIPT not in html
    refused = client.post(
        "/w/acme/declarations/",
        {"kind": "document", "doc-path": "relative.md", "doc-content": "x"},
    )
    assert refused.status_code == 400 and "absolute path" in refused.content.decode()
    client.post(url, {"action": "save", "content": "new text"})
    document.refresh_from_db()
    assert document.content == "new text"
    client.post(url, {"action": "delete"})
    assert not ContextDocument.objects.exists()


def test_the_preview_assembles_without_recording(acme, bob, as_user):
    store_project(acme)
    client = as_user(bob)
    html = client.get(
        "/w/acme/declarations/?directory=/srv/app/sub&env=DSH_CONTEXT_PARAMS%3Dfast",
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert html.lstrip().startswith('<div id="assembly-preview"')
    assert "/srv/app/.dsh/context.yaml" in html
    assert f"You are the rocket agent. {ESCAPED_SCRIPT}" in html and SCRIPT not in html
    assert "day 1: launched" in html  # the preload
    assert not SessionEvent.objects.exists()
    relative = client.get("/w/acme/declarations/?directory=srv", HTTP_HX_REQUEST="true")
    assert "absolute path" in relative.content.decode()
    bad_env = client.get("/w/acme/declarations/?directory=/srv&env=PATH%3D/bin")
    assert "only DSH_CONTEXT_* variables are read" in bad_env.content.decode()


def test_a_viewer_reads_but_every_change_is_refused(acme, victor, as_user):
    declaration = store_project(acme)
    document = ContextDocument.objects.get(path="/srv/app/notes.md")
    client = as_user(victor)
    page = client.get(f"/w/acme/declarations/{declaration.pk}/").content.decode()
    assert "AGENT.md" in page and "Delete declaration" not in page
    attempts = [
        ("/w/acme/declarations/", {"kind": "declaration", "new-directory": "/x"}),
        ("/w/acme/declarations/", {"kind": "document", "doc-path": "/x.md"}),
        (f"/w/acme/declarations/{declaration.pk}/", {"action": "delete"}),
        (f"/w/acme/declarations/{declaration.pk}/", {"action": "save", "source_text": ""}),
        (f"/w/acme/documents/{document.pk}/", {"action": "delete"}),
    ]
    for url, data in attempts:
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert b"Viewers cannot change anything" in response.content
    assert Declaration.objects.count() == 1 and ContextDocument.objects.count() == 2


def test_an_outsider_gets_404_for_every_method(acme, mallory, as_user):
    declaration = store_project(acme)
    document = ContextDocument.objects.get(path="/srv/app/notes.md")
    client = as_user(mallory)
    for url in (
        "/w/acme/declarations/",
        f"/w/acme/declarations/{declaration.pk}/",
        f"/w/acme/documents/{document.pk}/",
    ):
        for method in ("get", "post", "put", "delete"):
            assert getattr(client, method)(url).status_code == 404, (method, url)
    assert Declaration.objects.count() == 1
