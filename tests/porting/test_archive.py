"""memflow's own archive: export → empty workspace → import → export gives the same bytes."""

from __future__ import annotations

import datetime as dt
import io
import json
import tarfile

import pytest

from contexts.errors import Invalid
from contexts.flowctx import services as flowctx_services
from contexts.flowctx.selectors import compression_get
from contexts.tenancy import services as context_services
from memflow_site.cli import main as cli
from memflow_site.porting import archive_import, workspace_export
from memories import core, services
from memories.models import Memory, MemoryEvidence
from skills import services as skill_services


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 2, n, 9, 30, 15, 250000, tzinfo=dt.UTC)


@pytest.fixture
def filled(acme, alice):
    """A workspace using every kind of thing an archive carries."""
    fill_memories(acme, alice)
    fill_core_memory(acme, alice)
    fill_declarations_skills_and_refs(acme, alice)
    return acme


def fill_memories(acme, alice):
    """Memories with a history: an extension, a state change, a conclusion, a supersede."""
    session = context_services.agent_session_get_or_create(
        workspace=acme, external_id="cc-session-1", user=alice, app="claude-code"
    )
    first = [
        services.RememberInput(
            text="The staging database is db-stage-2",
            compartment="infra",
            app="dsh",
            metadata={"tags": ["db"]},
            created_at=day(1),
        ),
        services.RememberInput(text="Deploys go out on Tuesdays", source="hook", created_at=day(2)),
        services.RememberInput(
            text="The user lives in Beijing", state_key="user.city", created_at=day(4)
        ),
        services.RememberInput(
            text="Use ruff for linting every Python repository", created_at=day(6)
        ),
        services.RememberInput(
            text="Format Python code with ruff format, not black", created_at=day(6)
        ),
        services.RememberInput(text="CI runs on GitHub Actions", created_at=day(7)),
    ]
    staging, tuesday, _, ruff, black, old_ci = (
        r.memory
        for r in services.memory_remember_bulk(
            workspace=acme, items=first, user=alice, session=session
        )
    )
    then = [
        # An extension merges: the old text stays as a tombstone of the longer one.
        services.RememberInput(
            text="Deploys go out on Tuesdays from the release branch", created_at=day(3)
        ),
        services.RememberInput(
            text="The user moved to Hangzhou", state_key="user.city", created_at=day(5)
        ),
    ]
    services.memory_remember_bulk(workspace=acme, items=then, user=alice)
    services.memory_consolidate(
        workspace=acme, ids=[ruff.pk, black.pk], conclusion="Python tooling is ruff only"
    )
    services.memory_supersede(
        workspace=acme, memory=old_ci, text="CI moved to the self-hosted Woodpecker runner"
    )
    services.memory_pin(memory=staging, pinned=True)
    services.memory_rehearse(ids=[staging.pk, tuesday.pk])


def fill_core_memory(acme, alice):
    """USER and MEMORY core memory, an archived fact and a raised limit."""
    for fact in ("Rust service at ~/code/myapi, Axum + SQLx", "Never commit .env files"):
        core.core_edit(scope="memory", action="add", workspace=acme, user=None, content=fact)
    core.core_edit(scope="memory", action="add", workspace=acme, user=None, content="Old fact")
    core.core_move_to_archive(
        scope="memory", workspace=acme, user=None, old_text="Old fact", category="facts"
    )
    core.core_set_limit(scope="memory", workspace=acme, user=None, limit=3000)
    core.core_edit(
        scope="user", action="add", workspace=acme, user=alice, content="Prefers short answers"
    )


def fill_declarations_skills_and_refs(acme, alice):
    """Context settings, a declaration and its documents, a skill, a pinned tool output."""
    context_services.context_config_set(workspace=acme, options={"perFileBytes": 4096})
    context_services.declaration_store(
        workspace=acme,
        directory="/home/alice/rockets",
        source_text="systemPrompt:\n  - AGENT.md\npreload:\n  - memory/status.md\n",
    )
    context_services.context_documents_store(
        workspace=acme,
        documents=[
            ("/home/alice/rockets/AGENT.md", "You are the rockets agent.\n"),
            ("/home/alice/rockets/memory/status.md", "Launch window: the 14th. 发射窗口\n"),
        ],
    )
    skill_services.skill_create(
        workspace=acme,
        user=alice,
        name="deploy-app",
        description="Deploy the app to staging, then production",
        body="# Deploy\n\n1. `make deploy ENV=staging`",
        metadata={"allowed-tools": "Bash(make deploy:*)"},
    )
    ref = flowctx_services.compression_store(
        workspace=acme,
        content=b"FAILED tests/test_x.py::test_y - AssertionError\n" * 200,
        tool_name="pytest",
        exit_code=1,
    ).ref
    flowctx_services.compression_pin(ref=ref, pinned=True)


def members(path) -> dict[str, bytes]:
    with tarfile.open(path, mode="r:gz") as archive:
        return {
            m.name: archive.extractfile(m).read()  # type: ignore[union-attr]
            for m in archive
            if m.isfile()
        }


def memory_lines(data: dict[str, bytes]) -> list[dict]:
    return [json.loads(line) for line in data["memories.jsonl"].decode().splitlines()]


def test_the_archive_holds_every_field_and_link_by_export_id(filled, alice, tmp_path):
    out = tmp_path / "acme.tar.gz"
    report = workspace_export(workspace=filled, out=out, user=alice, with_compression_refs=True)

    data = members(out)
    assert next(iter(data)) == "manifest.json"
    manifest = json.loads(data["manifest.json"])
    assert manifest["format"] == "memflow-archive" and manifest["version"] == 1
    assert manifest["counts"] == report.counts
    assert report.counts["memories"] == 11 and report.counts["evidence links"] == 2
    assert manifest["core"]["memory"] == {"limit": 3000, "file": "core/MEMORY.md"}
    assert manifest["core"]["user"]["username"] == "alice"
    assert manifest["context_options"]["perFileBytes"] == 4096
    assert data["core/MEMORY.md"] == (
        b"Rust service at ~/code/myapi, Axum + SQLx \xc2\xa7\nNever commit .env files \xc2\xa7\n"
    )
    assert b"name: deploy-app" in data["skills/deploy-app/SKILL.md"]

    lines = memory_lines(data)
    assert [line["id"] for line in lines] == list(range(1, 12))
    by_text = {line["text"]: line for line in lines}
    staging = by_text["The staging database is db-stage-2"]
    assert staging["created_at"] == "2026-02-01T09:30:15.250000+00:00"
    assert (staging["pinned"], staging["access_count"], staging["user"]) == (True, 1, "alice")
    assert (staging["session"], staging["compartment"], staging["app"]) == (
        "cc-session-1",
        "infra",
        "dsh",
    )
    tombstone = by_text["Deploys go out on Tuesdays"]
    merged = by_text["Deploys go out on Tuesdays from the release branch"]
    assert tombstone["superseded_by"] == merged["id"]
    assert tombstone["metadata"] == {"tombstone_of": merged["id"]}
    conclusion = by_text["Python tooling is ruff only"]
    assert conclusion["evidence"] == conclusion["metadata"]["evidence_ids"]
    archived = by_text["Old fact"]
    assert archived["compartment"] == "facts" and archived["expires_at"] is not None
    beijing = by_text["The user lives in Beijing"]
    assert beijing["valid_to"] is not None and beijing["state_key"] == "user.city"


def test_export_import_export_gives_the_same_bytes_and_a_second_import_adds_nothing(
    filled, alice, tmp_path
):
    first = tmp_path / "first.tar.gz"
    workspace_export(workspace=filled, out=first, user=alice, with_compression_refs=True)

    # A fresh start: the workspace and everything in it is gone.
    context_services.workspace_delete(workspace=filled)
    fresh = context_services.workspace_create(user=alice, slug="acme", name="Acme Rockets")
    report = archive_import(path=first, workspace=fresh, user=alice)

    assert report.skipped == [] and report.warnings == []
    assert report.added["memories"] == 11
    assert report.present == {"core lines": 1}  # alice's USER document outlived the workspace
    second = tmp_path / "second.tar.gz"
    workspace_export(workspace=fresh, out=second, user=alice, with_compression_refs=True)
    assert members(second) == members(first)
    assert second.read_bytes() == first.read_bytes()

    # The engine's indexes were kept: recall finds the imported rows.
    hits = services.selectors.memory_recall(workspace=fresh, query="db-stage-2", k=3).hits
    assert hits and hits[0].memory.text == "The staging database is db-stage-2"
    original = compression_get(
        workspace=fresh, sha256=json.loads(members(first)["compression.jsonl"])["sha256"]
    )
    assert bytes(original.content).startswith(b"FAILED tests/test_x.py::test_y")

    # Importing it again adds nothing.
    counts = (Memory.objects.filter(workspace=fresh).count(), MemoryEvidence.objects.count())
    again = archive_import(path=first, workspace=fresh, user=alice)
    assert again.added_total == 0
    assert again.present["memories"] == 11 and again.present["supersede links"] == 3
    assert (Memory.objects.filter(workspace=fresh).count(), MemoryEvidence.objects.count()) == (
        counts
    )


def test_a_secret_in_an_archive_is_skipped_and_its_links_named(acme, tmp_path):
    token = "ghp_" + "A1r2c3h4i5v6e7S8e9c0" * 2
    lines = [
        {"id": 1, "text": f"token {token}", "created_at": "2026-01-01T00:00:00+00:00"},
        {
            "id": 2,
            "text": "Rotate tokens monthly",
            "created_at": "2026-01-02T00:00:00+00:00",
            "evidence": [1],
        },
        {"id": 3, "text": "no created_at"},
    ]
    manifest = {"format": "memflow-archive", "version": 1}
    path = tmp_path / "hand-made.tar.gz"
    with tarfile.open(path, mode="w:gz") as archive:
        for name, text in (
            ("manifest.json", json.dumps(manifest)),
            ("memories.jsonl", "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            archive.addfile(info, io.BytesIO(text.encode()))

    report = archive_import(path=path, workspace=acme)

    assert report.added == {"memories": 1}
    assert [(s.item, s.reason.split(" (")[0]) for s in report.skipped] == [
        ("memories.jsonl:4", "unreadable line"),
        ("memories.jsonl:3", "unreadable memory"),
        ("memories.jsonl:1 (#1)", "secret refused"),
        ("evidence link #2 -> #1", "the evidence was skipped"),
    ]


def test_an_archive_from_a_newer_memflow_is_refused(acme, tmp_path):
    path = tmp_path / "future.tar.gz"
    with tarfile.open(path, mode="w:gz") as archive:
        text = json.dumps({"format": "memflow-archive", "version": 99}).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(text)
        archive.addfile(info, io.BytesIO(text))
    with pytest.raises(Invalid, match="version 99"):
        archive_import(path=path, workspace=acme)


def test_the_command_line_imports_exports_and_still_does_core(
    acme, alice, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("MEMFLOW_DATA_DIR", str(tmp_path / "data"))
    export = tmp_path / "mem0.json"
    export.write_text(
        json.dumps([{"id": "m-1", "memory": "Likes tea", "created_at": "2025-01-01T00:00:00Z"}])
    )
    core.core_edit(scope="memory", action="add", workspace=acme, user=None, content="A fact")

    assert cli.main(["import", "mem0", str(export), "--workspace", "acme", "--json"]) == 0
    first = capsys.readouterr()
    assert json.loads(first.out)["added"] == {"memories": 1}
    assert "Imported" in first.err
    assert cli.main(["import", "mem0", str(export), "--workspace", "acme", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["present"] == {"memories": 1}

    out = tmp_path / "acme.tar.gz"
    assert cli.main(["export", "--workspace", "acme", "--out", str(out), "--user", "alice"]) == 0
    assert "memories.jsonl" in members(out) and "Wrote" in capsys.readouterr().err

    assert cli.main(["export", "core", "--workspace", "acme"]) == 0
    assert capsys.readouterr().out == "A fact §\n"
    assert cli.main(["import", "flymemory", str(tmp_path / "nope.pkl"), "--workspace", "acme"])
    assert "does not exist" in capsys.readouterr().err
