"""The skills page: the catalogue, every version with its why, the evolution log, archive/restore."""

from __future__ import annotations

import pytest

from skills import services
from skills.models import Skill, SkillEvent


@pytest.fixture
def checklist(acme):
    skill = services.skill_create(
        workspace=acme,
        user=None,
        name="release-checklist",
        description="Cut a release <script>alert(1)</script>",
        body="1. Tag\n2. Build",
        why="written by hand",
    )
    return services.skill_edit(
        skill=skill, user=None, why="add the announce step", body="1. Tag\n2. Build\n3. Announce"
    )


def test_it_lists_skills_with_every_version_and_why(checklist, victor, as_user):
    html = as_user(victor).get("/w/acme/skills/").content.decode()
    assert "<code>release-checklist</code>" in html
    assert "2 versions" in html
    assert "add the announce step" in html and "written by hand" in html
    assert "3. Announce" in html
    # Descriptions are agent-written text: escaped, never run.
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # The evolution log says why things changed.
    assert "New version" in html


def test_a_viewer_sees_no_actions_and_is_refused_server_side(checklist, victor, as_user):
    client = as_user(victor)
    assert 'value="archive"' not in client.get("/w/acme/skills/").content.decode()
    refused = client.post("/w/acme/skills/", {"action": "archive", "name": "release-checklist"})
    assert refused.status_code == 403
    assert Skill.objects.get(name="release-checklist").status == Skill.Status.ACTIVE


def test_an_editor_archives_and_restores_with_the_reason_logged(checklist, bob, as_user):
    client = as_user(bob)
    archived = client.post(
        "/w/acme/skills/", {"action": "archive", "name": "release-checklist"}, follow=True
    )
    assert "Archived release-checklist." in archived.content.decode()
    assert Skill.objects.get(name="release-checklist").status == Skill.Status.ARCHIVED
    assert (
        "release-checklist"
        not in client.get("/w/acme/skills/")
        .content.decode()
        .split('id="skill-table"')[1]
        .split("</div>")[0]
    )
    assert (
        "<code>release-checklist</code>"
        in client.get("/w/acme/skills/?status=archived").content.decode()
    )
    client.post("/w/acme/skills/", {"action": "restore", "name": "release-checklist"})
    assert Skill.objects.get(name="release-checklist").status == Skill.Status.ACTIVE
    reasons = list(SkillEvent.objects.values_list("reason", flat=True))
    assert any(r.startswith("Archived by bob") for r in reasons)


def test_an_empty_workspace_says_so_in_words(acme, alice, as_user):
    html = as_user(alice).get("/w/acme/skills/").content.decode()
    assert "No skills in this workspace yet." in html
    assert "Nothing has happened to the skills yet." in html


def test_the_status_filter_swaps_only_the_table_for_htmx(checklist, alice, as_user):
    response = as_user(alice).get("/w/acme/skills/?status=all", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="skill-table">')
    assert "<h1>" not in html
