"""The optimizer: after N uses with feedback since the last version, the body is rewritten."""

from __future__ import annotations

import pytest

from skills import services, tasks
from skills.models import Skill, SkillEvent, SkillVersion
from tests.flowctx.chat_server import ChatServer, Reply
from tests.skills.conftest import queued, run_queued

BASE = "/api/v1/workspaces/acme/skills/release-python-package/"
BODY = "## Steps\n1. `git tag -s v$VERSION`\n2. `uv build`\n3. `uv publish`"

FEEDBACK = [
    ("failure", "uv publish needs UV_PUBLISH_TOKEN set first"),
    ("success", "worked once the token was exported"),
    ("failure", "the tag must be pushed before CI builds the wheel"),
    ("success", "fine on the second release"),
    ("success", "fine"),
]


@pytest.fixture
def skill(acme, bob) -> Skill:
    return services.skill_create(
        workspace=acme,
        user=bob,
        name="release-python-package",
        description="Release the Python package to PyPI",
        body=BODY,
    )


def report(client, outcome: str, feedback: str, session: str = "") -> dict:
    response = client.post(
        BASE + "uses/",
        {"outcome": outcome, "feedback": feedback, "session_id": session},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_five_uses_with_feedback_rewrite_the_body_and_keep_the_old_one(
    client, skill, django_capture_on_commit_callbacks
):
    for n, (outcome, text) in enumerate(FEEDBACK[:4]):
        with django_capture_on_commit_callbacks(execute=True):
            assert report(client, outcome, text, f"s{n}")["optimization_queued"] is False
    assert queued() == []
    with django_capture_on_commit_callbacks(execute=True):
        assert report(client, *FEEDBACK[4])["optimization_queued"] is True
    assert queued() == [("skills.tasks.skill_optimize", (skill.pk, 1))]
    assert run_queued() == [2]

    skill.refresh_from_db()
    assert skill.version == 2
    lessons = skill.body.split("## Lessons from use\n", 1)[1].splitlines()
    assert lessons == [
        "- Pitfall: uv publish needs UV_PUBLISH_TOKEN set first",
        "- Worked: worked once the token was exported",
        "- Pitfall: the tag must be pushed before CI builds the wheel",
        "- Worked: fine on the second release",
        "- Worked: fine",
    ]
    assert skill.body.startswith(BODY)
    v1, v2 = SkillVersion.objects.filter(skill=skill).order_by("version")
    assert v1.body == BODY
    assert (v2.source, v2.why) == (
        "optimizer",
        "Optimized after 5 uses with feedback since v1 (3 succeeded, 2 failed).",
    )
    event = SkillEvent.objects.get(kind="optimized")
    assert event.data["from_version"] == 1 and event.data["builder"] == "deterministic"


def test_uses_without_feedback_do_not_count(client, skill, django_capture_on_commit_callbacks):
    for _ in range(6):
        client.get(BASE + "?session_id=cc-1")
        with django_capture_on_commit_callbacks(execute=True):
            answer = report(client, "success", "", "cc-1")
        assert answer["optimization_queued"] is False
    assert queued() == []
    assert Skill.objects.get().use_count == 6


def test_the_count_starts_again_after_each_version(client, skill, bob):
    for outcome, text in FEEDBACK:
        report(client, outcome, text)
    services.skill_edit(skill=skill, user=bob, why="tidy up", body=BODY + "\n4. Announce it")
    skill.refresh_from_db()
    assert tasks.optimize_enqueue_if_due(skill=skill) is False
    # The job queued for v1 finds the skill moved on and does nothing.
    assert tasks.skill_optimize(skill.pk, 1) is None
    assert Skill.objects.get().version == 2


def test_a_duplicated_optimize_job_writes_one_version(client, skill):
    for outcome, text in FEEDBACK:
        report(client, outcome, text)
    assert tasks.skill_optimize(skill.pk, 1) == 2
    assert tasks.skill_optimize(skill.pk, 1) is None
    assert SkillVersion.objects.filter(skill=skill).count() == 2


def test_n_and_the_switch_are_per_workspace(client, skill, acme):
    acme.settings = {"skills_optimize_after": 2}
    acme.save()
    report(client, *FEEDBACK[0])
    assert report(client, *FEEDBACK[1])["optimization_queued"] is True
    acme.settings = {"skills_optimize_after": 2, "skills_optimization": False}
    acme.save()
    assert report(client, *FEEDBACK[2])["optimization_queued"] is False


def test_with_an_llm_the_rewrite_is_the_models(client, skill, settings):
    for outcome, text in FEEDBACK:
        report(client, outcome, text)
    rewritten = (
        "## Steps\n1. `export UV_PUBLISH_TOKEN=…`\n2. `git tag -s v$VERSION && git push --tags`\n"
        "3. `uv build`\n4. `uv publish`"
    )
    with ChatServer(replies=[Reply(content=rewritten)]) as server:
        settings.MEMFLOW_LLM_URL = server.url
        assert tasks.skill_optimize(skill.pk, 1) == 2
    sent = server.seen[0].body["messages"][1]["content"]
    assert "uv publish needs UV_PUBLISH_TOKEN set first" in sent and BODY in sent
    skill.refresh_from_db()
    assert skill.body == rewritten
    assert SkillEvent.objects.get(kind="optimized").data["builder"] == "llm"
