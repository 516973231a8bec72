"""Importing a skills folder: `<name>/SKILL.md` and dsh's flat `<name>.md`."""

from __future__ import annotations

import pytest

from contexts.errors import Invalid
from memflow_site.porting import skills_import
from skills.models import Skill
from tests.contexts.trees import write_tree

DEPLOY = (
    "---\nname: deploy-app\ndescription: Deploy the app to staging, then production\n"
    "allowed-tools: Bash(make deploy:*)\n---\n\n# Deploy\n\n1. `make deploy ENV=staging`\n"
)
TESTS = (
    "---\ndescription: Write a failing test first, then the fix\n---\n\n"
    "Run `pytest -x` after every change.\n"
)


@pytest.fixture
def folder(tmp_path):
    return write_tree(
        tmp_path / "skills",
        {
            "deploy-app/SKILL.md": DEPLOY,
            "deploy-app/scripts/deploy.sh": "#!/bin/sh\nmake deploy\n",
            "write-tests.md": TESTS,
            "broken/SKILL.md": "---\nname: broken\n---\n\nNo description here.\n",
        },
    )


def test_skills_arrive_with_their_front_matter_and_the_rest_is_named(acme, alice, folder):
    report = skills_import(path=folder, workspace=acme, user=alice)

    assert report.added == {"skills": 2}
    deploy = Skill.objects.get(workspace=acme, name="deploy-app")
    assert deploy.description == "Deploy the app to staging, then production"
    assert deploy.metadata == {"allowed-tools": "Bash(make deploy:*)"}
    assert deploy.body.startswith("# Deploy")
    assert Skill.objects.get(workspace=acme, name="write-tests").origin == "import"
    assert {(s.item, s.reason) for s in report.skipped} == {
        ("deploy-app/scripts/deploy.sh", "not a skill file"),
        ("broken/SKILL.md", "broken: no `description` in the front matter"),
    }


def test_a_second_run_adds_nothing_and_a_changed_skill_gets_a_version(acme, folder):
    skills_import(path=folder, workspace=acme)

    again = skills_import(path=folder, workspace=acme)
    assert again.added_total == 0 and again.present == {"skills": 2}

    (folder / "write-tests.md").write_text(TESTS + "\nAnd read the traceback.\n")
    changed = skills_import(path=folder, workspace=acme)
    assert changed.added == {"skill versions": 1}
    assert Skill.objects.get(workspace=acme, name="write-tests").version == 2


def test_a_file_is_not_a_skills_folder(acme, tmp_path):
    (tmp_path / "x.md").write_text("hello")
    with pytest.raises(Invalid):
        skills_import(path=tmp_path / "x.md", workspace=acme)
