"""Importing a mem0-style JSON export."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from contexts.errors import Invalid
from memflow_site.porting import mem0_import
from memories.models import Memory

TOKEN = "ghp_" + "M0e1m2o3r4y5E6x7p8o9" * 2


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "mem0.json"
    items = [
        {
            "id": "6f1c0b9e-1",
            "memory": "Prefers dark mode in every editor",
            "hash": "a1b2",
            "metadata": {"category": "preferences", "compartment": "Preferences"},
            "created_at": "2025-03-02T10:15:00.123456-08:00",
            "updated_at": "2025-03-04T08:00:00-08:00",
            "user_id": "alice",
            "categories": ["preferences"],
        },
        {
            "id": "6f1c0b9e-2",
            "memory": "Works on the rockets project in Rust",
            "created_at": "2025-03-01T09:00:00Z",
            "metadata": None,
            "agent_id": "coder",
        },
        {"id": "6f1c0b9e-3", "memory": f"api token {TOKEN}", "created_at": "2025-03-03"},
        {"id": "6f1c0b9e-4", "memory": "", "created_at": "2025-03-03"},
        {"id": "6f1c0b9e-5", "text_is_missing": True},
        "not an object",
        {"id": "6f1c0b9e-6", "memory": "Ships on Fridays", "created_at": "last week"},
    ]
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    return path


def test_memories_keep_their_time_and_mem0_fields(acme, alice, export):
    report = mem0_import(path=export, workspace=acme, user=alice)

    assert report.added == {"memories": 3}
    dark = Memory.objects.get(workspace=acme, text="Prefers dark mode in every editor")
    assert dark.created_at == dt.datetime(2025, 3, 2, 18, 15, 0, 123456, tzinfo=dt.UTC)
    assert dark.compartment == "preferences" and dark.source == "import"
    assert dark.metadata["mem0"] == {
        "id": "6f1c0b9e-1",
        "hash": "a1b2",
        "user_id": "alice",
        "categories": ["preferences"],
        "updated_at": "2025-03-04T08:00:00-08:00",
        "metadata": {"category": "preferences", "compartment": "Preferences"},
    }
    rust = Memory.objects.get(workspace=acme, text="Works on the rockets project in Rust")
    assert rust.metadata["mem0"] == {"id": "6f1c0b9e-2", "agent_id": "coder"}
    assert {(s.item, s.reason.split(" (")[0]) for s in report.skipped} == {
        ("mem0 6f1c0b9e-3", "secret refused"),
        ("mem0 6f1c0b9e-4", "empty text"),
        ("mem0 6f1c0b9e-5", "no `memory` text"),
        ("mem0 item 6", "not an object but str"),
    }
    assert [(w.item, w.reason) for w in report.warnings] == [
        ("mem0 6f1c0b9e-6", "created_at 'last week' is not a time; imported now")
    ]


def test_a_second_run_adds_nothing(acme, export):
    mem0_import(path=export, workspace=acme)
    again = mem0_import(path=export, workspace=acme)
    assert again.added_total == 0 and again.present == {"memories": 3}
    assert Memory.objects.filter(workspace=acme).count() == 3


def test_a_file_that_is_not_json_is_refused(acme, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text("{not json")
    with pytest.raises(Invalid, match="not JSON"):
        mem0_import(path=path, workspace=acme)
