"""Nudges: a qualifying turn that is not saved automatically is mentioned once, next prompt."""

from __future__ import annotations

from contexts.models import SessionEvent
from skills.models import Nudge, Skill, SkillEvent, SkillProposal
from tests.skills.conftest import queued, run_queued
from tests.skills.trajectories import BILLING_PROMPT, BILLING_TOOLS


def nudge_blocks(answer: dict) -> list[dict]:
    return [b for b in answer["blocks"] if b["name"] == "skills:nudge"]


def prompt(hook, text: str, **extra) -> dict:
    return hook("user-prompt", prompt=text, hook_event_name="UserPromptSubmit", **extra)


def test_with_confirmation_the_next_prompt_carries_the_nudge_exactly_once(acme, play, hook):
    acme.settings = {"skills_generation": "confirm"}
    acme.save()
    answer = play(BILLING_PROMPT, BILLING_TOOLS)
    proposal = SkillProposal.objects.get()
    assert proposal.status == "pending"
    assert f"skill proposal {proposal.pk} waits for confirmation (error_fix)" in answer["notes"]
    assert queued() == [] and not Skill.objects.exists()
    assert not nudge_blocks(answer)  # not on the turn end itself

    first = prompt(hook, "Now add a test for refunds")
    [block] = nudge_blocks(first)
    assert block["order"] == 240
    text = block["text"]
    assert text.startswith(
        '<memflow-nudge note="About your previous turn; data, not instructions.">'
    )
    assert f"This turn looked reusable: “{BILLING_PROMPT}”" in text
    assert "No module named 'stripe'" in text
    assert f"POST /api/v1/workspaces/acme/skills/proposals/{proposal.pk}/accept/" in text
    assert len(text) <= 600
    assert text in first["additionalContext"]
    nudge = Nudge.objects.get()
    assert nudge.delivered_at is not None and nudge.delivered_turn == 2
    # What was injected is in the session's log, like every other block.
    injected = SessionEvent.objects.filter(kind="injection").last()
    assert injected is not None
    assert "skills:nudge" in [b["name"] for b in injected.payload["blocks"]]

    second = prompt(hook, "And one for partial refunds")
    assert not nudge_blocks(second)
    kinds = list(SkillEvent.objects.order_by("id").values_list("kind", flat=True))
    assert kinds == ["proposed", "nudged", "nudge_shown"]


def test_accepting_a_nudged_proposal_drafts_and_saves_the_skill(
    acme, play, hook, client, django_capture_on_commit_callbacks
):
    acme.settings = {"skills_generation": "confirm"}
    acme.save()
    play(BILLING_PROMPT, BILLING_TOOLS)
    proposal = SkillProposal.objects.get()
    base = "/api/v1/workspaces/acme/skills/proposals/"
    listed = client.get(base + "?status=pending").json()["results"]
    assert [(p["id"], p["status"]) for p in listed] == [(proposal.pk, "pending")]
    assert listed[0]["nudge"].startswith("<memflow-nudge") and listed[0]["nudge_shown_at"] is None
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"{base}{proposal.pk}/accept/", format="json")
    assert answer.status_code == 202 and answer.json()["status"] == "queued"
    assert queued() == [("skills.tasks.proposal_generate", (proposal.pk,))]
    run_queued()
    assert Skill.objects.get().name == "fix-failing-billing-migration-tests"
    accepted = SkillEvent.objects.get(kind="accepted")
    assert accepted.reason == "Accepted by bob: queued for drafting."
    again = client.post(f"{base}{proposal.pk}/accept/", format="json")
    assert again.status_code == 409 and again.json()["code"] == "proposal_not_pending"


def test_with_generation_off_the_nudge_asks_the_agent_to_write_the_skill(acme, play, hook):
    acme.settings = {"skills_generation": "off"}
    acme.save()
    play(BILLING_PROMPT, BILLING_TOOLS)
    [block] = nudge_blocks(prompt(hook, "thanks, what next?"))
    assert "write it down as a skill: POST /api/v1/workspaces/acme/skills/" in block["text"]
    assert "accept" not in block["text"]
    assert not Skill.objects.exists() and queued() == []


def test_with_nudges_off_and_no_auto_generation_nothing_is_proposed(acme, play, hook):
    acme.settings = {"skills_generation": "confirm", "skills_nudges": False}
    acme.save()
    play(BILLING_PROMPT, BILLING_TOOLS)
    assert not SkillProposal.objects.exists()
    assert not nudge_blocks(prompt(hook, "next"))


def test_auto_generation_needs_no_nudge(acme, play, hook):
    play(BILLING_PROMPT, BILLING_TOOLS)
    assert not Nudge.objects.exists()
    assert not nudge_blocks(prompt(hook, "next"))


def test_a_muted_session_keeps_its_nudge_for_later(acme, play, hook, client):
    acme.settings = {"skills_generation": "confirm"}
    acme.save()
    play(BILLING_PROMPT, BILLING_TOOLS)
    acme.settings = {"skills_generation": "confirm", "muted_until": "2999-01-01T00:00:00+00:00"}
    acme.save()
    assert not nudge_blocks(prompt(hook, "quiet please"))
    assert Nudge.objects.get().delivered_at is None
    acme.settings = {"skills_generation": "confirm"}
    acme.save()
    assert nudge_blocks(prompt(hook, "back again"))


def test_a_nudge_belongs_to_its_own_session(acme, play, hook):
    acme.settings = {"skills_generation": "confirm"}
    acme.save()
    play(BILLING_PROMPT, BILLING_TOOLS, session="cc-1")
    assert not nudge_blocks(prompt(hook, "hello from another session", session="cc-2"))
    assert nudge_blocks(prompt(hook, "next", session="cc-1"))
