"""Importing HME files: MEMORY.md and USER.md into core memory, the archive into memories."""

from __future__ import annotations

import datetime as dt

import pytest

from contexts.errors import Invalid
from memflow_site.porting import hme_import
from memflow_site.porting.hme import archive_lines
from memories import core
from memories.models import Memory

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0" * 2

MEMORY_MD = (
    "User's project is a Rust web service at ~/code/myapi using Axum + SQLx §\n"
    "This machine runs Ubuntu 22.04, has Docker and Podman installed §\n"
)
USER_MD = "Prefers short answers with code first §\nWrites in Chinese and English §\n"


@pytest.fixture
def hme_dir(tmp_path):
    """A workspace the way HME lays it out: `.dsh/hme/` with the archive split by tag."""
    base = tmp_path / "project" / ".dsh" / "hme"
    (base / "archive").mkdir(parents=True)
    (base / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    (base / "USER.md").write_text(USER_MD, encoding="utf-8")
    (base / "archive" / "facts.md").write_text(
        "# Facts\n\n"
        "- [#facts] [v:2] [expires:2099-01-01] The staging database is db-stage-2 §\n"
        "- [v:1] The CI runner has four cores and 16 GB of memory §\n"
        "- [expires:2020-01-01] The old VPN gateway was vpn-1 §\n",
        encoding="utf-8",
    )
    (base / "archive.md").write_text(
        "## Lessons\n"
        "- [v:3] Always run the migrations before the test suite §\n"
        "## Preferences\n"
        "- [#preference] Tabs are never used for indentation §\n"
        f"- the registry login uses {TOKEN} §\n"
        "- [expires:someday] An entry with an unreadable expiry §\n",
        encoding="utf-8",
    )
    return tmp_path / "project"


def test_archive_lines_read_tags_versions_expiry_and_headings():
    lines = archive_lines(
        "## Methods\n- [v:2] [#lesson] Bisect before guessing §\n* Read the logs first\n",
        file="archive.md",
        default_category="facts",
    )
    assert [(x.category, x.version, x.text) for x in lines] == [
        ("lessons", 2, "Bisect before guessing"),
        ("methods", None, "Read the logs first"),
    ]


def test_core_files_arrive_byte_for_byte_and_the_archive_becomes_memories(acme, alice, hme_dir):
    report = hme_import(path=hme_dir, workspace=acme, user=alice)

    memory = core.core_view(scope="memory", user=None, workspace=acme)
    user = core.core_view(scope="user", user=alice, workspace=acme)
    assert core.core_export_text(memory) == MEMORY_MD
    assert core.core_export_text(user) == USER_MD
    assert report.added == {"core lines": 4, "memories": 4}

    rows = {m.text: m for m in Memory.objects.filter(workspace=acme)}
    staging = rows["The staging database is db-stage-2"]
    assert staging.compartment == "facts" and staging.source == "import"
    assert staging.expires_at == dt.datetime(2099, 1, 1, tzinfo=dt.UTC)
    assert staging.metadata["hme"] == {
        "file": "archive/facts.md",
        "line": 3,
        "tag": "#facts",
        "v": 2,
    }
    assert rows["The CI runner has four cores and 16 GB of memory"].expires_at is None
    assert rows["Always run the migrations before the test suite"].compartment == "lessons"
    assert rows["Tabs are never used for indentation"].compartment == "preferences"
    assert {(s.item, s.reason.split(" (")[0]) for s in report.skipped} == {
        ("archive/facts.md:5", "expired on 2020-01-01"),
        ("archive.md:5", "secret refused"),
        ("archive.md:6", "unreadable expiry 'someday'"),
    }


def test_a_second_run_adds_nothing(acme, alice, hme_dir):
    hme_import(path=hme_dir, workspace=acme, user=alice)
    versions = core.core_view(scope="memory", user=None, workspace=acme).version

    again = hme_import(path=hme_dir, workspace=acme, user=alice)

    assert again.added_total == 0
    assert again.present == {"core lines": 4, "memories": 4}
    assert core.core_view(scope="memory", user=None, workspace=acme).version == versions
    assert Memory.objects.filter(workspace=acme).count() == 4


def test_user_md_needs_a_user_and_secret_lines_stay_out(acme, tmp_path):
    (tmp_path / "MEMORY.md").write_text(
        f"Deploy keys live in the vault §\nThe deploy key is {TOKEN} §\n", encoding="utf-8"
    )
    (tmp_path / "USER.md").write_text(USER_MD, encoding="utf-8")

    report = hme_import(path=tmp_path, workspace=acme)

    assert core.core_view(scope="memory", user=None, workspace=acme).content == (
        "Deploy keys live in the vault §"
    )
    assert [(s.item, s.reason.split(" (")[0]) for s in report.skipped] == [
        ("MEMORY.md line 2", "secret refused"),
        ("USER.md", "USER.md belongs to a user: give --user NAME"),
    ]


def test_a_folder_without_hme_files_is_refused(acme, tmp_path):
    with pytest.raises(Invalid, match=r"no MEMORY\.md"):
        hme_import(path=tmp_path, workspace=acme)
