"""Skills on the dashboard: each version's diff from the one before, the
catalogue exported as a skills folder, and the overview's "skills changed"."""

# The pages print real minus and multiplication signs, and the tests read what they print.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from skills import folder, services
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT


@pytest.fixture
def checklist(acme):
    skill = services.skill_create(
        workspace=acme,
        user=None,
        name="release-checklist",
        description="Cut a release",
        body="1. Tag\n2. Build",
        why="written by hand",
    )
    return services.skill_edit(
        skill=skill,
        user=None,
        why="add the announce step",
        body=f"1. Tag\n2. Build and sign\n3. Announce {SCRIPT}",
        description="Cut and announce a release",
    )


def test_each_version_shows_its_diff_from_the_one_before(checklist, victor, as_user):
    html = as_user(victor).get("/w/acme/skills/").content.decode()
    v2 = html.split("v2 ·")[1].split("v1 ·")[0]
    assert "+2 −1" in v2 and "changes from v1" in v2
    assert '<li class="diff-removed"><del><span class="visually-hidden">removed: </span><span class="diff-mark" aria-hidden="true">−</span>2. Build</del></li>' in v2  # fmt: skip
    added = [line.split("</span>")[-1] for line in v2.split('<li class="diff-added">')[1:]]
    assert added[0].startswith("2. Build and sign")
    assert added[1].startswith(f"3. Announce {ESCAPED_SCRIPT}")
    assert "<del>Cut a release</del> → <ins>Cut and announce a release</ins>" in v2
    v1 = html.split("v1 ·")[1]
    assert "changes from" not in v1.split("</li>")[0]  # the first version has nothing before it
    assert SCRIPT not in html


def test_the_catalogue_downloads_as_a_skills_folder(checklist, victor, as_user):
    client = as_user(victor)  # reading: viewers export too
    page = client.get("/w/acme/skills/?status=all").content.decode()
    assert 'href="/w/acme/skills/export/?status=all" download' in page
    response = client.get("/w/acme/skills/export/?status=all")
    assert response.status_code == 200 and response["Content-Type"] == "application/gzip"
    assert 'filename="acme-skills-' in response["Content-Disposition"]
    files = folder.archive_read(response.content).files
    assert [(f.name, f.description) for f in files] == [
        ("release-checklist", "Cut and announce a release")
    ]
    assert files[0].body.startswith("1. Tag\n2. Build and sign")
    archived = services.skill_archive(skill=checklist, user=None, reason="done")
    assert archived.status == "archived"
    assert folder.archive_read(client.get("/w/acme/skills/export/").content).files == []


def test_the_overview_asks_the_skills_page_for_recent_changes(checklist, victor, as_user):
    client = as_user(victor)
    overview = client.get("/w/acme/").content.decode()
    assert 'id="skill-changes" hx-get="/w/acme/skills/" hx-trigger="load"' in overview
    panel = client.get(
        "/w/acme/skills/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="skill-changes"
    ).content.decode()
    assert panel.lstrip().startswith('<section class="card" id="skill-changes">')
    assert "Skills changed" in panel and "add the announce step" in panel
    assert "<table" not in panel


def test_an_outsider_gets_404(checklist, evil, mallory, as_user):
    client = as_user(mallory)
    assert client.get("/w/acme/skills/export/").status_code == 404
    assert (
        client.get(
            "/w/acme/skills/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="skill-changes"
        ).status_code
        == 404
    )
