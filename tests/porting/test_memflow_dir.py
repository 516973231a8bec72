"""Importing a MEMFLOW project directory into stored declarations and documents."""

from __future__ import annotations

import json

import pytest

from contexts.declarations import ContextConfig, DiskSource, assemble
from contexts.errors import Invalid
from contexts.models import ContextDocument, Declaration
from contexts.tenancy.selectors import context_source_for
from memflow_site.porting import memflow_dir_import
from tests.contexts.trees import write_tree

HOSTNAME = "devbox"
TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0" * 2


@pytest.fixture
def project(tmp_path):
    return write_tree(
        tmp_path / "rockets",
        {
            ".dsh/context.yaml": (
                "systemPrompt:\n  - AGENT.md\n"
                "preload:\n  - memory/status.md\n  - memory/history.md\n  - memory/missing.md\n"
            ),
            "AGENT.md": "You are the rockets agent. Read memory/ first.\n",
            "memory/status.md": "# Status\nLaunch window opens on the 14th.\n",
            "memory/history.md": "# History\n2026-01-05 engine test passed.\n",
            "memory/notes.md": "Valve 3 sticks below -20 C.\n",
            "memory/bricks/countdown.md": "# Countdown brick\nT-10 … T-0 checklist.\n",
            "memory/credentials.md": f"registry: {TOKEN}\n",
            "src/main.rs": "fn main() {}\n",
        },
    )


def canonical(assembly) -> str:
    return json.dumps(assembly.to_json(), ensure_ascii=False, sort_keys=True)


def test_the_server_assembles_the_directory_as_the_disk_does(acme, project):
    report = memflow_dir_import(path=project, workspace=acme)

    assert report.added == {"declarations": 1, "documents": 5}
    assert Declaration.objects.get(workspace=acme).directory == str(project)
    stored = set(ContextDocument.objects.filter(workspace=acme).values_list("path", flat=True))
    assert stored == {
        str(project / name)
        for name in (
            "AGENT.md",
            "memory/status.md",
            "memory/history.md",
            "memory/notes.md",
            "memory/bricks/countdown.md",
        )
    }
    assert {(s.item, s.reason.split(" (")[0]) for s in report.skipped} == {
        (str(project / "memory/credentials.md"), "secret refused"),
        (
            str(project / "memory/missing.md"),
            "named by the declaration, cannot be read: no such file",
        ),
    }
    config = ContextConfig()
    options = {"directory": str(project), "config": config, "env": {}, "hostname": HOSTNAME}
    disk = assemble(source=DiskSource(), **options)  # type: ignore[arg-type]
    server = assemble(source=context_source_for(workspace=acme, config=config), **options)  # type: ignore[arg-type]
    assert canonical(server) == canonical(disk)
    assert server.sections[0].text == "You are the rockets agent. Read memory/ first.\n"


def test_a_second_run_adds_nothing_and_a_changed_file_is_replaced(acme, project):
    memflow_dir_import(path=project, workspace=acme)

    again = memflow_dir_import(path=project, workspace=acme)
    assert again.added_total == 0
    assert again.present == {"declarations": 1, "documents": 5}

    (project / "memory" / "status.md").write_text("# Status\nLaunch slipped to the 21st.\n")
    changed = memflow_dir_import(path=project, workspace=acme)
    assert changed.added == {"documents": 1}
    assert "21st" in ContextDocument.objects.get(path=str(project / "memory/status.md")).content


def test_a_directory_with_nothing_to_import_is_refused(acme, tmp_path):
    with pytest.raises(Invalid, match="neither"):
        memflow_dir_import(path=tmp_path, workspace=acme)
