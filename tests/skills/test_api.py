"""The skills REST API: catalogue, one skill, versions, archive, uses, scopes, tenancy."""

from __future__ import annotations

import pytest

from contexts.models import Membership
from contexts.tenancy import services as context_services
from skills import services
from skills.models import Skill, SkillEvent, SkillUse

BASE = "/api/v1/workspaces/acme/skills/"

RELEASE = {
    "name": "release-python-package",
    "description": "Release the Python package to PyPI with a signed tag",
    "body": "1. `git tag -s v$VERSION`\n2. `uv build`\n3. `uv publish`",
}


@pytest.fixture
def release(client) -> dict:
    response = client.post(BASE, RELEASE, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_created_skills_start_at_version_one_with_a_reason(release, bob):
    assert release["version"] == 1 and release["scope"] == "workspace"
    assert release["status"] == "active" and release["origin"] == "person"
    skill = Skill.objects.get(name="release-python-package")
    assert skill.embedding is not None and skill.created_by == bob
    assert SkillEvent.objects.get(skill=skill).reason == "Created by bob."


def test_the_catalogue_shows_names_and_descriptions_only(client, release):
    client.post(
        BASE,
        {"name": "bump-deps", "description": "Bump dependencies weekly", "body": "uv lock -U"},
        format="json",
    )
    catalogue = client.get(BASE).json()
    assert catalogue["count"] == 2
    assert catalogue["results"] == [
        {"name": "bump-deps", "description": "Bump dependencies weekly", "scope": "workspace"},
        {
            "name": "release-python-package",
            "description": RELEASE["description"],
            "scope": "workspace",
        },
    ]


def test_getting_a_skill_with_a_session_id_records_a_use(client, release):
    plain = client.get(BASE + "release-python-package/").json()
    assert plain["body"] == RELEASE["body"] and plain["use_count"] == 0
    loaded = client.get(BASE + "release-python-package/?session_id=cc-7").json()
    assert loaded["use_count"] == 1 and loaded["last_used_at"] is not None
    use = SkillUse.objects.get()
    assert use.session is not None and use.session.external_id == "cc-7"
    assert (use.outcome, use.version) == ("pending", 1)


def test_a_missing_skill_is_a_404_with_a_code(client, acme):
    response = client.get(BASE + "no-such-skill/")
    assert response.status_code == 404
    assert response.json()["code"] == "skill_not_found"


@pytest.mark.parametrize(
    "name, code",
    [
        ("Release Package", "invalid_name"),
        ("release--package", "invalid_name"),
        ("export", "invalid_name"),  # a route under skills/
        ("a" * 65, "invalid"),
    ],
)
def test_names_follow_the_harness_rules(client, acme, name, code):
    response = client.post(BASE, {**RELEASE, "name": name}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == code


def test_a_name_is_unique_in_its_scope(client, release):
    again = client.post(BASE, RELEASE, format="json")
    assert again.status_code == 409 and again.json()["code"] == "skill_exists"


def test_an_edit_is_a_new_version_and_the_old_one_stays(client, release):
    response = client.patch(
        BASE + "release-python-package/",
        {"body": RELEASE["body"] + "\n4. Check the package page", "why": "forgot to check PyPI"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 2
    versions = client.get(BASE + "release-python-package/versions/").json()["results"]
    assert [(v["version"], v["why"], v["source"]) for v in versions] == [
        (1, "Created by bob.", "person"),
        (2, "forgot to check PyPI", "person"),
    ]
    assert versions[0]["body"] == RELEASE["body"]
    assert versions[1]["created_by"] == "bob"
    event = SkillEvent.objects.filter(kind="versioned").get()
    assert event.reason == "Edited by bob: forgot to check PyPI"


def test_an_edit_needs_a_why_and_a_change(client, release):
    no_why = client.patch(BASE + "release-python-package/", {"body": "x y z"}, format="json")
    assert no_why.status_code == 400
    same = client.patch(
        BASE + "release-python-package/", {"body": RELEASE["body"], "why": "again"}, format="json"
    )
    assert same.status_code == 400 and same.json()["code"] == "no_change"


def test_a_new_description_is_embedded_again(client, release):
    def embedding() -> list[float]:
        vector = Skill.objects.get().embedding
        assert vector is not None
        return [float(x) for x in vector]

    before = embedding()
    client.patch(
        BASE + "release-python-package/",
        {"description": "Cut a release of the CLI to Homebrew", "why": "we moved off PyPI"},
        format="json",
    )
    assert embedding() != before


def test_archive_and_restore_move_a_skill_out_of_and_back_into_the_catalogue(client, release):
    archived = client.post(
        BASE + "release-python-package/archive/", {"reason": "we stopped publishing"}, format="json"
    )
    assert archived.json()["status"] == "archived"
    assert client.get(BASE).json()["count"] == 0
    assert client.get(BASE + "?status=archived").json()["results"][0]["name"] == RELEASE["name"]
    # Still readable by name, so a person can decide to bring it back.
    assert client.get(BASE + "release-python-package/").status_code == 200
    restored = client.post(BASE + "release-python-package/restore/", {}, format="json")
    assert restored.json()["status"] == "active"
    assert client.get(BASE).json()["count"] == 1
    log = client.get(BASE + "events/?skill=release-python-package").json()["results"]
    assert [e["reason"] for e in log] == [
        "Restored by bob.",
        "Archived by bob: we stopped publishing",
        "Created by bob.",
    ]


def test_feedback_completes_the_use_the_session_started(client, release):
    client.get(BASE + "release-python-package/?session_id=cc-7")
    response = client.post(
        BASE + "release-python-package/uses/",
        {
            "outcome": "failure",
            "feedback": "uv publish needs UV_PUBLISH_TOKEN",
            "session_id": "cc-7",
        },
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["use"]["outcome"] == "failure"
    assert response.json()["optimization_queued"] is False
    use = SkillUse.objects.get()  # the load, now rated: no second use
    assert use.feedback == "uv publish needs UV_PUBLISH_TOKEN" and use.rated_at is not None
    skill = client.get(BASE + "release-python-package/").json()
    assert (skill["use_count"], skill["failure_count"], skill["success_count"]) == (1, 1, 0)
    # Reported without a load first, a use counts on its own.
    client.post(BASE + "release-python-package/uses/", {"outcome": "success"}, format="json")
    skill = client.get(BASE + "release-python-package/").json()
    assert (skill["use_count"], skill["success_count"]) == (2, 1)
    uses = client.get(BASE + "release-python-package/uses/").json()["results"]
    assert [u["outcome"] for u in uses] == ["success", "failure"]
    assert uses[1]["session_id"] == "cc-7"


def test_a_viewer_reads_but_cannot_write(acme, victor, make_key, api, release):
    client = api(make_key(victor, workspace=acme))
    assert client.get(BASE + "release-python-package/").status_code == 200
    response = client.post(BASE, {**RELEASE, "name": "other-skill"}, format="json")
    assert response.status_code == 403
    assert client.post(BASE + "release-python-package/archive/", {}).status_code == 403


def test_a_global_skill_follows_its_owner_into_every_workspace(
    client, acme, alice, bob, make_key, api
):
    created = client.post(
        BASE,
        {**RELEASE, "name": "my-git-aliases", "description": "My git aliases", "scope": "user"},
        format="json",
    )
    assert created.status_code == 201 and created.json()["scope"] == "user"
    skill = Skill.objects.get(name="my-git-aliases")
    assert skill.workspace is None and skill.owner == bob
    lab = context_services.workspace_create(user=bob, slug="lab", name="Bob's lab")
    in_lab = api(make_key(bob, workspace=lab)).get("/api/v1/workspaces/lab/skills/").json()
    assert in_lab["results"] == [
        {"name": "my-git-aliases", "description": "My git aliases", "scope": "user"}
    ]
    # Alice works in acme too, but bob's global skills are his alone.
    as_alice = api(make_key(alice, workspace=acme))
    assert as_alice.get(BASE).json()["count"] == 0
    assert as_alice.get(BASE + "my-git-aliases/").status_code == 404


def test_a_workspace_skill_shadows_a_global_one_of_the_same_name(client, release):
    client.post(BASE, {**RELEASE, "body": "my own way", "scope": "user"}, format="json")
    assert client.get(BASE + "release-python-package/").json()["scope"] == "workspace"
    mine = client.get(BASE + "release-python-package/?scope=user").json()
    assert (mine["scope"], mine["body"]) == ("user", "my own way")
    assert [r["scope"] for r in client.get(BASE).json()["results"]] == ["workspace", "user"]


def test_another_workspaces_key_gets_404_for_every_skill_route(
    acme, evil, mallory, bob, make_key, api, release
):
    outsider = api(make_key(mallory))
    for method, path in [
        ("get", BASE),
        ("get", BASE + "release-python-package/"),
        ("patch", BASE + "release-python-package/"),
        ("post", BASE + "release-python-package/archive/"),
        ("post", BASE + "release-python-package/uses/"),
        ("get", BASE + "export/"),
        ("post", BASE + "import/"),
        ("get", BASE + "events/"),
    ]:
        response = getattr(outsider, method)(path, {}, format="json")
        assert response.status_code == 404, (method, path)
        assert response.json()["code"] == "workspace_not_found"
    # Bob's key for another workspace of his reaches nothing in acme either.
    lab = context_services.workspace_create(user=bob, slug="lab", name="Bob's lab")
    restricted = api(make_key(bob, workspace=lab))
    assert restricted.get(BASE + "release-python-package/").status_code == 404
    # And mallory's own catalogue holds nothing of acme's.
    own = outsider.get("/api/v1/workspaces/evil/skills/").json()
    assert (own["count"], own["results"]) == (0, [])
    assert Skill.objects.get().use_count == 0


def test_skills_tool_calls_count_as_uses(acme, bob, hook):
    skill = services.skill_create(
        workspace=acme, user=bob, name="release-python-package", description="d", body="b"
    )
    hook(
        "post-tool-use",
        hook_event_name="PostToolUse",
        tool_name="Skill",
        tool_input={"skill": "release-python-package"},
        tool_response={"success": True, "commandName": "release-python-package"},
    )
    skill.refresh_from_db()
    assert skill.use_count == 1
    use = SkillUse.objects.get()
    assert use.session is not None and use.session.external_id == "cc-1"
    # A skill memflow does not hold is the harness's business.
    hook("post-tool-use", tool_name="Skill", tool_input={"skill": "pdf"})
    assert SkillUse.objects.count() == 1


def test_membership_is_checked_on_every_call(client, acme, bob, release):
    Membership.objects.filter(user=bob, workspace=acme).delete()
    assert client.get(BASE).status_code == 404
