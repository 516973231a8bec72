"""Export and import of the harness's skills folder (`<name>/SKILL.md` in a tar.gz)."""

# Chinese text is typed with fullwidth punctuation; these strings keep it on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import base64
import io
import tarfile
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from contexts.tenancy import services as context_services
from skills import folder, services
from skills.models import Skill, SkillVersion

BASE = "/api/v1/workspaces/acme/skills/"

TRICKY: list[dict[str, Any]] = [
    {
        "name": "release-python-package",
        "description": 'Release to PyPI: tag, build, "publish" — never from a dirty tree',
        "body": (
            "# Release\n\n1. `git tag -s v$VERSION`\n\n---\n\n"
            "```yaml\n---\nname: not-front-matter\n---\n```\n\n2. `uv publish`"
        ),
        "metadata": {"allowed-tools": "Bash(git tag:*), Bash(uv publish:*)"},
    },
    {
        "name": "deploy-staging",
        "description": "部署到测试环境：先迁移数据库，再 docker compose up",
        "body": "## 步骤\n1. `python manage.py migrate`\n2. `docker compose up -d`\n\n    indented: kept as is\n注意",
        "metadata": {},
    },
]


def tar_gz(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def members(data: bytes) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return {
            m.name: archive.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in archive
            if m.isfile()
        }


@pytest.fixture
def tricky_skills(acme, bob) -> None:
    for item in TRICKY:
        services.skill_create(workspace=acme, user=bob, **item)


def test_the_export_is_a_skills_folder_claude_code_reads(client, tricky_skills, bob, acme):
    services.skill_archive(
        skill=services.skill_create(
            workspace=acme, user=bob, name="old-one", description="gone", body="x"
        ),
        user=bob,
    )
    response = client.get(BASE + "export/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/gzip"
    assert response["Content-Disposition"].startswith('attachment; filename="acme-skills-')
    files = members(response.content)
    assert sorted(files) == ["deploy-staging/SKILL.md", "release-python-package/SKILL.md"]
    text = files["release-python-package/SKILL.md"]
    assert text.startswith("---\nname: release-python-package\ndescription: ")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {
        "name": "release-python-package",
        "description": TRICKY[0]["description"],
        "allowed-tools": "Bash(git tag:*), Bash(uv publish:*)",
    }
    # Archived skills only on request.
    everything = members(client.get(BASE + "export/?status=all").content)
    assert "old-one/SKILL.md" in everything


def test_export_then_import_is_lossless(client, tricky_skills, bob, make_key, api):
    exported = client.get(BASE + "export/").content
    lab = context_services.workspace_create(user=bob, slug="lab", name="Bob's lab")
    lab_client = api(make_key(bob, workspace=lab))
    answer = lab_client.post(
        "/api/v1/workspaces/lab/skills/import/", exported, content_type="application/gzip"
    )
    assert answer.status_code == 200, answer.content
    assert sorted(answer.json()["created"]) == ["deploy-staging", "release-python-package"]
    for item in TRICKY:
        copy = Skill.objects.get(workspace=lab, name=item["name"])
        original = Skill.objects.get(workspace__slug="acme", name=item["name"])
        assert (copy.description, copy.body, copy.metadata) == (
            original.description,
            original.body,
            original.metadata,
        )
        assert copy.origin == "import"
    # And back out, byte for byte.
    assert lab_client.get("/api/v1/workspaces/lab/skills/export/").content == exported


def test_importing_the_same_folder_again_changes_nothing(client, tricky_skills):
    exported = client.get(BASE + "export/").content
    answer = client.post(BASE + "import/", exported, content_type="application/gzip").json()
    assert sorted(answer["unchanged"]) == ["deploy-staging", "release-python-package"]
    assert answer["created"] == answer["versioned"] == []
    assert SkillVersion.objects.count() == 2


def test_an_edited_file_comes_back_as_a_new_version(client, tricky_skills):
    files = members(client.get(BASE + "export/").content)
    files["deploy-staging/SKILL.md"] = files["deploy-staging/SKILL.md"].replace(
        "docker compose up -d", "docker compose up -d --wait"
    )
    answer = client.post(BASE + "import/", tar_gz(files), content_type="application/gzip").json()
    assert answer["versioned"] == ["deploy-staging"]
    skill = Skill.objects.get(name="deploy-staging")
    assert skill.version == 2 and "--wait" in skill.body
    version = SkillVersion.objects.get(skill=skill, version=2)
    assert version.source == "import"
    assert version.why == "Imported from a skills folder (deploy-staging/SKILL.md) by bob."


def test_dsh_flat_files_and_nested_folders_are_read_and_the_rest_skipped(client, acme):
    archive = tar_gz(
        {
            "skills/bump-deps.md": "---\nname: bump-deps\ndescription: Bump deps weekly\n---\nuv lock -U\n",
            "skills/profile-export/SKILL.md": "---\ndescription: Profile the export\n---\npy-spy\n",
            "skills/profile-export/scripts/run.sh": "#!/bin/sh\n",
            "skills/profile-export/reference.md": "# more\n",
            "skills/README.md": "# My skills\n",
            "skills/Bad Name/SKILL.md": "---\nname: Bad Name\ndescription: x\n---\nbody\n",
        }
    )
    answer = client.post(BASE + "import/", archive, content_type="application/gzip").json()
    assert sorted(answer["created"]) == ["bump-deps", "profile-export"]
    skipped = {s["path"]: s["reason"] for s in answer["skipped"]}
    assert skipped["skills/profile-export/scripts/run.sh"] == "not a skill file"
    assert skipped["skills/profile-export/reference.md"] == "not a skill file"
    assert "description" in skipped["skills/README.md"]
    assert "lowercase" in skipped["skills/Bad Name/SKILL.md"]
    assert Skill.objects.get(name="profile-export").body == "py-spy"


def test_multipart_and_base64_uploads_work_and_can_target_the_users_scope(client, bob):
    archive = tar_gz(
        {
            "my-git-aliases/SKILL.md": "---\nname: my-git-aliases\ndescription: Aliases\n---\ngit co\n"
        }
    )
    upload = io.BytesIO(archive)
    upload.name = "skills.tar.gz"
    answer = client.post(BASE + "import/?scope=user", {"file": upload}, format="multipart")
    assert answer.status_code == 200 and answer.json()["created"] == ["my-git-aliases"]
    assert Skill.objects.get(name="my-git-aliases").owner == bob
    encoded = base64.b64encode(tar_gz({"x/SKILL.md": "---\nname: x1\ndescription: d\n---\nb\n"}))
    answer = client.post(BASE + "import/", {"archive_base64": encoded.decode()}, format="json")
    assert answer.json()["created"] == ["x1"]


def test_a_broken_archive_is_refused(client, acme):
    answer = client.post(BASE + "import/", b"not a tarball", content_type="application/gzip")
    assert answer.status_code == 400 and answer.json()["code"] == "invalid_archive"
    garbled = client.post(BASE + "import/", {"archive_base64": "%%%"}, format="json")
    assert garbled.status_code == 400 and garbled.json()["code"] == "invalid_base64"


one_line = st.text(
    alphabet=st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), min_size=1, max_size=80
).map(lambda s: " ".join(s.split()))
bodies = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=300).map(
    str.strip
)


@settings(max_examples=200, deadline=None)
@given(description=one_line.filter(bool), body=bodies.filter(bool))
def test_a_skill_md_reads_back_as_written(description, body):
    text = folder.skill_md_render(
        name="any-skill", description=description, body=body, metadata={"x-tag": description}
    )
    parsed = folder.skill_md_parse(text)
    assert (parsed.name, parsed.description, parsed.body) == ("any-skill", description, body)
    assert parsed.metadata == {"x-tag": description}
