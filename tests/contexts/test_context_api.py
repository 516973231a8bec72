"""Declarations, documents and context assembly through the REST API, with
the session event log as the record of what each session was given."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from contexts.declarations import DiskSource, assemble, sha256_text
from contexts.models import AgentSession, ContextDocument, Declaration, SessionEvent
from contexts.tenancy import selectors, services
from tests.contexts.trees import HOSTNAME, store_tree, write_tree

BASE = "/api/v1/workspaces/acme"


@pytest.fixture
def alice_api(alice, acme, make_key, api):
    return api(make_key(alice, scope="admin"))


@pytest.fixture
def project(acme, tmp_path):
    """A stored project: a declaration with identity and preload files."""
    root = write_tree(
        tmp_path,
        {
            "proj/.dsh/context.yaml": "systemPrompt:\n  - AGENT.md\npreload:\n"
            "  - memory/${device}/status.md\n  - memory/history.md\n",
            "proj/AGENT.md": "You are the rocket agent.\n",
            "proj/memory/laptop/status.md": "状态绿灯\n",
            "proj/memory/history.md": "day 1: launched\n",
        },
    )
    store_tree(acme, root)
    return root / "proj"


def _assemble(client, directory, session="s-1", **extra):
    body = {"directory": str(directory), "session_id": session, "hostname": HOSTNAME, **extra}
    return client.post(f"{BASE}/contexts/assemble/", body, format="json")


# --- declarations --------------------------------------------------------------


def test_a_declaration_is_created_then_replaced(alice_api):
    body = {"directory": "/srv/app/", "source_text": "systemPrompt: [A.md]\n"}
    created = alice_api.post(f"{BASE}/declarations/", body, format="json")
    assert created.status_code == 201, created.content
    data = created.json()
    assert data["directory"] == "/srv/app"  # normalised
    assert (data["system_prompt"], data["preload"], data["inherit"]) == (["A.md"], [], False)
    body["source_text"] = "preload: [m.md]\ninherit: true\n"
    replaced = alice_api.post(f"{BASE}/declarations/", body, format="json")
    assert replaced.status_code == 200
    assert replaced.json()["id"] == data["id"]
    assert (replaced.json()["preload"], replaced.json()["inherit"]) == (["m.md"], True)
    listed = alice_api.get(f"{BASE}/declarations/", {"directory": "/srv/app"}).json()["results"]
    assert [d["id"] for d in listed] == [data["id"]]
    detail = alice_api.get(f"{BASE}/declarations/{data['id']}/").json()
    assert detail["source_text"] == "preload: [m.md]\ninherit: true\n"
    assert alice_api.delete(f"{BASE}/declarations/{data['id']}/").status_code == 204
    assert alice_api.get(f"{BASE}/declarations/{data['id']}/").json()["code"] == (
        "declaration_not_found"
    )


def test_a_malformed_declaration_is_refused_with_its_line(alice_api):
    response = alice_api.post(
        f"{BASE}/declarations/",
        {"directory": "/srv/app", "source_text": "systemPrompt:\n  - A.md\n  -\n"},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_declaration"
    assert body["line"] == 3
    assert body["detail"].startswith("/srv/app/.dsh/context.yaml:3: ")
    assert not Declaration.objects.exists()


def test_a_declaration_needs_an_absolute_directory(alice_api):
    response = alice_api.post(
        f"{BASE}/declarations/", {"directory": "srv/app", "source_text": ""}, format="json"
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid_path"


def test_a_viewer_reads_declarations_but_cannot_write_them(acme, victor, make_key, api):
    client = api(make_key(victor))
    assert client.get(f"{BASE}/declarations/").status_code == 200
    response = client.post(
        f"{BASE}/declarations/", {"directory": "/x", "source_text": ""}, format="json"
    )
    assert response.status_code == 403 and response.json()["code"] == "read_only_role"


def test_another_workspaces_declaration_is_not_found(alice_api, evil):
    foreign, _ = services.declaration_store(workspace=evil, directory="/x", source_text="")
    response = alice_api.get(f"{BASE}/declarations/{foreign.pk}/")
    assert response.status_code == 404
    assert alice_api.delete(f"{BASE}/declarations/{foreign.pk}/").status_code == 404
    assert Declaration.objects.filter(pk=foreign.pk).exists()


# --- documents -----------------------------------------------------------------


def test_documents_are_stored_in_bulk_listed_without_content_and_replaced(alice_api):
    documents = [
        {"path": "/srv/app/AGENT.md", "content": "agent\n"},
        {"path": "/srv/app/memory/../memory/notes.md", "content": "笔记"},
    ]
    response = alice_api.post(f"{BASE}/documents/", {"documents": documents}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == [
        {"path": "/srv/app/AGENT.md", "sha256": sha256_text("agent\n"), "bytes": 6},
        {"path": "/srv/app/memory/notes.md", "sha256": sha256_text("笔记"), "bytes": 6},
    ]
    listed = alice_api.get(f"{BASE}/documents/", {"prefix": "/srv/app/memory/"}).json()["results"]
    assert [d["path"] for d in listed] == ["/srv/app/memory/notes.md"]
    assert "content" not in listed[0]
    again = [{"path": "/srv/app/AGENT.md", "content": "agent v2\n"}]
    alice_api.post(f"{BASE}/documents/", {"documents": again}, format="json")
    document = ContextDocument.objects.get(path="/srv/app/AGENT.md")
    assert (document.content, document.sha256) == ("agent v2\n", sha256_text("agent v2\n"))
    detail = alice_api.get(f"{BASE}/documents/{document.pk}/").json()
    assert detail["content"] == "agent v2\n"
    assert alice_api.delete(f"{BASE}/documents/{document.pk}/").status_code == 204
    assert ContextDocument.objects.count() == 1


@pytest.mark.parametrize(
    ("document", "code"),
    [
        ({"path": "relative.md", "content": "x"}, "invalid_path"),
        ({"path": "/srv/app/.dsh/context.yaml", "content": "x"}, "declaration_path"),
        ({"path": "/srv/big.md", "content": "大" * 400_000}, "document_too_large"),
    ],
)
def test_unusable_documents_are_refused_and_nothing_is_stored(alice_api, document, code):
    documents = [{"path": "/srv/ok.md", "content": "ok"}, document]
    response = alice_api.post(f"{BASE}/documents/", {"documents": documents}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert not ContextDocument.objects.exists()


def test_the_same_path_twice_in_one_call_is_refused(alice_api):
    documents = [{"path": "/a.md", "content": "1"}, {"path": "/a.md", "content": "2"}]
    response = alice_api.post(f"{BASE}/documents/", {"documents": documents}, format="json")
    assert response.json()["code"] == "duplicate_path"


# --- assembly ------------------------------------------------------------------


def test_assembly_returns_ordered_sections_and_the_preload(alice_api, project):
    response = _assemble(alice_api, project, device="laptop")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["session_id"] == "s-1"
    assert [(s["name"], s["order"], s["source"]) for s in body["system_sections"]] == [
        ("identity:0", 10, str(project / "AGENT.md"))
    ]
    assert body["system_sections"][0]["text"] == "You are the rocket agent.\n"
    preload = body["preload"]
    assert [f["path"] for f in preload["files"]] == [
        str(project / "memory/laptop/status.md"),
        str(project / "memory/history.md"),
    ]
    assert "状态绿灯" in preload["text"]
    assert body["preload_delivered_at"] is None
    session = AgentSession.objects.get(external_id="s-1")
    assert (session.cwd, session.device) == (str(project), "laptop")


def test_the_preload_is_given_once_per_session(alice_api, project):
    first = _assemble(alice_api, project, device="laptop").json()
    assert first["preload"] is not None
    for _ in range(3):
        again = _assemble(alice_api, project, device="laptop").json()
        assert again["preload"] is None
        assert again["preload_delivered_at"] is not None
        # Identity sections are re-read on every assembly.
        assert again["system_sections"] == first["system_sections"]
    other_session = _assemble(alice_api, project, session="s-2", device="laptop").json()
    assert other_session["preload"]["sha256"] == first["preload"]["sha256"]
    session = AgentSession.objects.get(external_id="s-1")
    kinds = list(session.events.values_list("kind", flat=True))
    assert kinds == ["context.assembly", "context.preload"] + ["context.assembly"] * 3
    preload_event = session.events.get(kind="context.preload")
    assert preload_event.payload["text"] == first["preload"]["text"]
    assert [f["sha256"] for f in preload_event.payload["files"]] == [
        sha256_text("状态绿灯\n"),
        sha256_text("day 1: launched\n"),
    ]


def test_every_assembly_records_what_was_sent_and_from_which_files(alice_api, acme, project):
    _assemble(alice_api, project, device="laptop", env={"DSH_CONTEXT_PARAMS": "only tests"})
    services.context_documents_store(
        workspace=acme, documents=[(str(project / "AGENT.md"), "You are the new agent.\n")]
    )
    _assemble(alice_api, project, device="laptop")
    _assemble(alice_api, project, device="laptop")
    session = AgentSession.objects.get(external_id="s-1")
    events = list(session.events.filter(kind="context.assembly").order_by("at", "id"))
    first = events[0].payload
    assert first["origin"] == "server"
    assert first["request"] == {
        "device": "laptop",
        "hostname": HOSTNAME,
        "env": {"DSH_CONTEXT_PARAMS": "only tests"},
        "delegation_depth": 0,
    }
    assert [d["path"] for d in first["declarations"]] == [str(project / ".dsh/context.yaml")]
    assert [(s["source"], s["sha256"]) for s in first["sections"]] == [
        (str(project / "AGENT.md"), sha256_text("You are the rocket agent.\n")),
        (None, sha256_text("only tests")),
    ]
    assert first["preload"]["delivered"] is True
    # Texts are stored when they change, not on every prompt…
    assert set(first["texts"]) == {s["sha256"] for s in first["sections"]}
    assert list(events[1].payload["texts"].values()) == ["You are the new agent.\n"]
    assert events[1].payload["preload"]["delivered"] is False
    assert events[2].payload["texts"] == {}
    # …and the log restores them all.
    log = selectors.session_context_log(session=session)
    assert [[s["text"] for s in entry["sections"]] for entry in log] == [
        ["You are the rocket agent.\n", "only tests"],
        ["You are the new agent.\n"],
        ["You are the new agent.\n"],
    ]


def test_assembly_accepts_only_dsh_context_variables(alice_api, project):
    response = _assemble(alice_api, project, env={"HOME": "/root", "DSH_CONTEXT_IGNORE": "1"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_env"
    assert not SessionEvent.objects.exists()


def test_without_a_device_stored_device_files_then_the_host_name_decide(alice_api, acme, project):
    services.context_documents_store(
        workspace=acme,
        documents=[(str(project / "memory/devbox/status.md"), "host status\n")],
    )
    body = _assemble(alice_api, project, session="by-host").json()
    assert "host status" in body["preload"]["text"]
    services.context_documents_store(
        workspace=acme, documents=[(str(project / ".device"), "laptop\n")]
    )
    body = _assemble(alice_api, project, session="by-file").json()
    assert "状态绿灯" in body["preload"]["text"]


def test_a_viewer_cannot_assemble_it_writes_the_session_log(acme, victor, make_key, api, project):
    # tests/reliability/test_access.py covers read keys and contexts/record/ too.
    response = _assemble(api(make_key(victor)), project)
    assert response.status_code == 403
    assert response.json()["code"] == "read_only_role"
    assert not AgentSession.objects.filter(workspace=acme).exists()


def test_the_workspace_options_apply_to_its_assemblies(alice_api, acme, project):
    response = alice_api.put(
        f"{BASE}/contexts/config/", {"perFileBytes": 4, "sectionOrderBase": 50}, format="json"
    )
    assert response.status_code == 200, response.content
    options = response.json()["options"]
    assert (options["perFileBytes"], options["sectionOrderBase"], options["maxSections"]) == (
        4,
        50,
        16,
    )
    body = _assemble(alice_api, project, device="laptop").json()
    assert body["system_sections"][0]["order"] == 50
    status_file = body["preload"]["files"][0]
    assert (status_file["sent_bytes"], status_file["limited"]) == (3, True)  # one 3-byte character
    assert "limited snapshot" in body["preload"]["text"]


def test_bad_options_are_refused_and_only_owners_set_them(alice_api, acme, bob, make_key, api):
    response = alice_api.put(f"{BASE}/contexts/config/", {"discover": "up"}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_config"
    editor = api(make_key(bob))
    assert editor.get(f"{BASE}/contexts/config/").json()["options"]["discover"] == "nearest"
    assert editor.put(f"{BASE}/contexts/config/", {}, format="json").status_code == 403


def test_unusable_stored_options_fall_back_to_the_defaults_with_a_warning(alice_api, acme, project):
    acme.settings = {"context": {"perFileBytes": "lots"}}
    acme.save()
    body = _assemble(alice_api, project, device="laptop").json()
    assert body["warnings"][0].startswith("the workspace's context options are unusable")
    assert body["system_sections"]  # the assembly went on
    assert alice_api.get(f"{BASE}/contexts/config/").json()["error"]


# --- assemblies resolved on the agent's disk -----------------------------------------


def test_a_client_resolved_assembly_is_recorded_and_shares_the_preload_once(alice_api, project):
    local = assemble(
        source=DiskSource(), directory=str(project), device="laptop", hostname=HOSTNAME
    )
    body = {"session_id": "s-1", "assembly": local.to_json(), "device": "laptop"}
    first = alice_api.post(f"{BASE}/contexts/record/", body, format="json")
    assert first.status_code == 200, first.content
    assert local.preload is not None
    assert first.json()["preload"]["text"] == local.preload.text
    assert first.json()["system_sections"] == [s.to_json() for s in local.sections]
    # The server-side assembly for the same session knows the preload was given.
    assert _assemble(alice_api, project, device="laptop").json()["preload"] is None
    second = alice_api.post(f"{BASE}/contexts/record/", body, format="json").json()
    assert second["preload"] is None
    event = SessionEvent.objects.filter(kind="context.assembly").order_by("at", "id")[0]
    assert event.payload["origin"] == "client"
    assert event.payload["request"]["device"] == "laptop"


def test_a_client_assembly_with_a_wrong_hash_is_refused(alice_api, project):
    local = assemble(source=DiskSource(), directory=str(project), device="laptop").to_json()
    local["sections"][0]["text"] = "You are someone else.\n"
    response = alice_api.post(
        f"{BASE}/contexts/record/", {"session_id": "s-1", "assembly": local}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_assembly"
    assert "sections[0].sha256" in response.json()["detail"]
    assert not SessionEvent.objects.exists()


# --- concurrency ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_assemblies_give_the_preload_once(acme, alice, tmp_path):
    root = write_tree(tmp_path, {".dsh/context.yaml": "preload: [m.md]\n", "m.md": "perceive this"})
    store_tree(acme, root)
    session = services.agent_session_get_or_create(workspace=acme, external_id="race", user=alice)

    def run(_: int) -> bool:
        try:
            delivered = services.context_assemble(
                workspace=acme, session=session, directory=str(root), hostname=HOSTNAME
            )
            return delivered.preload is not None
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        given = list(pool.map(run, range(12)))
    assert given.count(True) == 1
    assert session.events.filter(kind="context.preload").count() == 1
    assert session.events.filter(kind="context.assembly").count() == 12
