"""Skills generated from real trajectories driven through the hook endpoints."""

# Chinese text is typed with fullwidth punctuation; these strings keep it on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

from datetime import timedelta

from django.db.models import F

from contexts.models import AgentSession, SessionEvent
from skills.models import Skill, SkillEvent, SkillProposal, SkillVersion
from tests.flowctx.chat_server import ChatServer, Reply, closed_port_url
from tests.skills.conftest import queued, run_queued
from tests.skills.trajectories import (
    BILLING_ANSWER,
    BILLING_PROMPT,
    BILLING_TOOLS,
    DOCS_ANSWER,
    DOCS_PROMPT,
    DOCS_TOOLS,
    bash,
    bash_failed,
    read,
)


def trigger_kinds(proposal: SkillProposal) -> list[str]:
    return [t["kind"] for t in proposal.triggers]


def test_a_long_tool_heavy_turn_becomes_a_skill_with_its_steps(acme, play):
    answer = play(DOCS_PROMPT, DOCS_TOOLS, answer=DOCS_ANSWER)
    proposal = SkillProposal.objects.get()
    assert trigger_kinds(proposal) == ["tool_calls"]
    assert "7 tool calls (more than 5)" in proposal.triggers[0]["detail"]
    assert f"skill proposal {proposal.pk} queued (tool_calls)" in answer["notes"]
    # The drafting is a django-q2 job, queued once the hook's transaction committed.
    assert queued() == [("skills.tasks.proposal_generate", (proposal.pk,))]
    assert run_queued() == ["applied"]

    skill = Skill.objects.get()
    assert skill.workspace == acme and skill.origin == "generator" and skill.version == 1
    assert skill.name == "set-up-docs-build-mkdocs"
    assert skill.description.startswith(DOCS_PROMPT)
    assert "## Steps" in skill.body
    for step in ("`uv run mkdocs build --strict`", "Write `mkdocs.yml`", "Edit `README.md`"):
        assert step in skill.body
    assert DOCS_ANSWER in skill.body
    proposal.refresh_from_db()
    assert (proposal.status, proposal.builder, proposal.outcome) == (
        "applied",
        "deterministic",
        "created",
    )
    assert proposal.skill == skill
    version = SkillVersion.objects.get(skill=skill)
    assert version.why.startswith("Generated from session cc-1, turn 1: 7 tool calls")
    kinds = list(SkillEvent.objects.order_by("id").values_list("kind", flat=True))
    assert kinds == ["proposed", "created"]


def test_an_error_fixed_within_the_turn_keeps_the_pitfall_and_the_fix(acme, play):
    play(BILLING_PROMPT, BILLING_TOOLS, answer=BILLING_ANSWER)
    proposal = SkillProposal.objects.get()
    assert trigger_kinds(proposal) == ["error_fix"]
    assert "ModuleNotFoundError: No module named 'stripe'" in proposal.triggers[0]["detail"]
    run_queued()
    skill = Skill.objects.get()
    assert skill.name == "fix-failing-billing-migration-tests"
    pitfalls = skill.body.split("## Pitfalls\n", 1)[1].split("\n\n", 1)[0]
    assert "`pytest tests/test_billing_migrations.py` failed" in pitfalls
    assert "ModuleNotFoundError: No module named 'stripe'" in pitfalls
    assert "then `pytest tests/test_billing_migrations.py` worked" in pitfalls
    steps = skill.body.split("## Steps\n", 1)[1].split("\n\n", 1)[0]
    assert steps.splitlines() == [
        "1. `uv add stripe`",
        "2. `pytest tests/test_billing_migrations.py`",
    ]


def test_an_english_correction_teaches_what_the_user_wanted(acme, play):
    play("Install the project's dependencies", [bash("pip install -r requirements.txt", "ok")])
    assert not SkillProposal.objects.exists()  # one call, no error, no correction
    play(
        "No, that's wrong: use uv sync instead of pip in this repo",
        [bash("uv sync", "Resolved 58 packages\nInstalled 58 packages")],
    )
    proposal = SkillProposal.objects.get()
    assert proposal.turn == 2
    assert trigger_kinds(proposal) == ["correction"]
    run_queued()
    skill = Skill.objects.get()
    # Named after what was being done; the correction is in the body.
    assert skill.name == "install-project-dependencies"
    assert "use uv sync instead of pip" in skill.body.split("## User corrections", 1)[1]
    assert "1. `uv sync`" in skill.body


def test_a_chinese_correction_is_recognised_too(acme, play):
    play("帮我把服务部署到测试环境", [bash("docker compose up -d", "Started 3 containers")])
    assert not SkillProposal.objects.exists()
    play(
        "不对，应该先运行数据库迁移再部署",
        [
            bash("python manage.py migrate", "Applying billing.0007_invoice_currency... OK"),
            bash("docker compose up -d", "Started 3 containers"),
        ],
    )
    proposal = SkillProposal.objects.get()
    assert trigger_kinds(proposal) == ["correction"]
    assert "不对" in proposal.triggers[0]["detail"]
    run_queued()
    skill = Skill.objects.get()
    # No ASCII words in the request: the name comes from the commands the turn ran.
    assert skill.name == "python-docker-compose"
    assert skill.description.startswith("帮我把服务部署到测试环境")
    assert "不对，应该先运行数据库迁移再部署" in skill.body


def test_a_turn_longer_than_three_minutes_qualifies(acme, hook):
    hook(
        "user-prompt", prompt="Profile the slow invoice export", hook_event_name="UserPromptSubmit"
    )
    hook("post-tool-use", **bash("py-spy record -o profile.svg -- python export.py", "saved"))
    # The turn started four minutes before it ended.
    session = AgentSession.objects.get(external_id="cc-1")
    SessionEvent.objects.filter(session=session, turn=1).update(at=F("at") - timedelta(minutes=4))
    hook("stop", hook_event_name="Stop")
    proposal = SkillProposal.objects.get()
    assert trigger_kinds(proposal) == ["long_turn"]
    assert "the turn took 4 min" in proposal.triggers[0]["detail"]


def test_a_short_quiet_turn_proposes_nothing(acme, play):
    answer = play(
        "What does the settings module do?",
        [read("memflow_site/settings.py", "DEBUG = False\n")],
        answer="It reads every value from the environment.",
    )
    assert not SkillProposal.objects.exists()
    assert not SkillEvent.objects.exists()
    assert queued() == []
    assert not any("skill" in note for note in answer["notes"])


def test_the_thresholds_are_per_workspace(acme, play):
    acme.settings = {"skills_trigger_tool_calls": 0, "skills_trigger_error_fix": False}
    acme.save()
    play(DOCS_PROMPT, DOCS_TOOLS)
    play(BILLING_PROMPT, BILLING_TOOLS)
    assert not SkillProposal.objects.exists()
    acme.settings = {"skills_trigger_tool_calls": 2}
    acme.save()
    play("Regenerate the API client", [bash("make client"), bash("make lint"), bash("make test")])
    assert trigger_kinds(SkillProposal.objects.get()) == ["tool_calls"]


def test_a_turn_end_reported_twice_proposes_once(acme, play, hook):
    play(BILLING_PROMPT, BILLING_TOOLS)
    hook("stop", hook_event_name="Stop", stop_hook_active=True)
    assert SkillProposal.objects.count() == 1
    assert len(queued()) == 1


def test_a_sub_agents_turn_is_not_proposed(acme, play):
    play(DOCS_PROMPT, DOCS_TOOLS, session="sub-1", delegation_depth=1)
    assert not SkillProposal.objects.exists()


def test_a_near_duplicate_proposal_becomes_a_new_version(acme, play):
    play(BILLING_PROMPT, BILLING_TOOLS, session="monday")
    run_queued()
    play(
        "Fix the failing billing migration tests again",
        [
            bash_failed(
                "pytest tests/test_billing_migrations.py",
                "Exit code 1\nE   django.db.utils.OperationalError: no such column: currency",
            ),
            bash("python manage.py makemigrations billing", "Migrations for 'billing': 0008"),
            bash("pytest tests/test_billing_migrations.py", "4 passed in 0.61s"),
        ],
        session="friday",
    )
    second = SkillProposal.objects.get(session__external_id="friday")
    run_queued()
    second.refresh_from_db()
    assert second.outcome == "versioned"
    assert second.similarity is not None and second.similarity >= 0.9
    skill = Skill.objects.get()  # still one skill
    assert skill.name == "fix-failing-billing-migration-tests" and skill.version == 2
    # Both turns' lessons are in the new body, the first one's unchanged in v1.
    assert "No module named 'stripe'" in skill.body
    assert "no such column: currency" in skill.body
    v1, v2 = SkillVersion.objects.filter(skill=skill).order_by("version")
    assert "no such column" not in v1.body
    assert v2.source == "generator"
    assert "near-duplicate of this skill (cosine 0.9" in v2.why
    assert "session friday, turn 1" in v2.why


def test_a_different_skill_with_a_taken_name_gets_its_own_name(acme, play, bob):
    from skills import services

    services.skill_create(
        workspace=acme,
        user=bob,
        name="fix-failing-billing-migration-tests",
        description="Rotate the staging database credentials every quarter",
        body="1. Ask ops for a new password",
    )
    play(BILLING_PROMPT, BILLING_TOOLS)
    run_queued()
    names = sorted(Skill.objects.values_list("name", flat=True))
    assert names == ["fix-failing-billing-migration-tests", "fix-failing-billing-migration-tests-2"]


SKILL_FROM_LLM = """---
name: billing-migration-tests
description: Run the billing migration tests; install missing packages with uv first
---
# Billing migration tests

1. `uv add stripe` when `ModuleNotFoundError: No module named 'stripe'` appears.
2. `pytest tests/test_billing_migrations.py`
"""


def test_with_an_llm_configured_the_skill_is_written_by_it(acme, play, settings):
    play(BILLING_PROMPT, BILLING_TOOLS, answer=BILLING_ANSWER)
    with ChatServer(replies=[Reply(chunks=(SKILL_FROM_LLM[:50], SKILL_FROM_LLM[50:]))]) as server:
        settings.MEMFLOW_LLM_URL = server.url
        settings.MEMFLOW_LLM_MODEL = "qwen-test"
        assert run_queued() == ["applied"]
    request = server.seen[0].body
    assert request["model"] == "qwen-test"
    prompt = request["messages"][1]["content"]
    assert "ModuleNotFoundError: No module named 'stripe'" in prompt
    assert "then `pytest tests/test_billing_migrations.py` worked" in prompt  # why this turn
    skill = Skill.objects.get()
    assert skill.name == "billing-migration-tests"
    assert skill.description == (
        "Run the billing migration tests; install missing packages with uv first"
    )
    assert skill.body.startswith("# Billing migration tests")
    assert SkillProposal.objects.get().builder == "llm"
    created = SkillEvent.objects.get(kind="created")
    assert created.data["builder"] == "llm"


def test_with_the_llm_down_the_deterministic_draft_is_saved(acme, play, settings):
    play(BILLING_PROMPT, BILLING_TOOLS)
    settings.MEMFLOW_LLM_URL = closed_port_url()
    settings.MEMFLOW_LLM_RETRIES = 0
    run_queued()
    assert SkillProposal.objects.get().builder == "deterministic"
    assert Skill.objects.get().name == "fix-failing-billing-migration-tests"


def test_a_proposal_is_drafted_once_even_if_its_job_runs_twice(acme, play):
    from skills import tasks

    play(BILLING_PROMPT, BILLING_TOOLS)
    proposal = SkillProposal.objects.get()
    assert tasks.proposal_generate(proposal.pk) == "applied"
    assert tasks.proposal_generate(proposal.pk) == "skipped"
    assert Skill.objects.get().version == 1
