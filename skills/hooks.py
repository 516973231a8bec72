"""What the skills app adds to the hook pipeline.

- stop (observer `skills:review-turn`): read the turn that just ended from the
  session's event log; when a trigger holds, record a proposal and either
  queue its drafting (`skills_generation` "auto") or leave a nudge.
- post-tool-use (observer `skills:track-use`): the harness's own skill tool
  (Claude Code's `Skill`) loading a skill memflow knows counts as a use.
- user-prompt (provider `skills:nudge`, order 240, after the per-turn memory
  blocks): the session's pending nudges, each shown once.
"""

from __future__ import annotations

import logging
from typing import Any

from contexts.errors import NotFound
from contexts.hooks import Block, HookContext, register_observer, register_provider
from contexts.tenancy.knobs import knob
from skills import generator, selectors, services, tasks
from skills.models import SkillProposal

logger = logging.getLogger(__name__)

NUDGE_ORDER = 240
_SKILL_TOOLS = {"skill", "load_skill", "use_skill"}
_SKILL_INPUT_KEYS = ("skill", "name", "skill_name", "command")


def trigger_settings(ctx: HookContext) -> generator.TriggerSettings:
    workspace = ctx.workspace
    return generator.TriggerSettings(
        tool_calls=int(knob(workspace, "skills_trigger_tool_calls")),
        error_fix=bool(knob(workspace, "skills_trigger_error_fix")),
        corrections=bool(knob(workspace, "skills_trigger_corrections")),
        seconds=int(knob(workspace, "skills_trigger_seconds")),
    )


def review_turn(ctx: HookContext) -> None:
    if ctx.delegation_depth > 0:
        return  # a sub-agent's turn belongs to its parent's
    workspace = ctx.workspace
    mode = knob(workspace, "skills_generation")
    if mode != "auto" and not knob(workspace, "skills_nudges"):
        return  # nothing would come of a proposal
    turn = max(ctx.session.turns, 1)
    trajectory = selectors.turn_trajectory(session=ctx.session, turn=turn)
    triggers = generator.turn_triggers(trajectory, settings=trigger_settings(ctx))
    if not triggers:
        return
    proposal = services.proposal_create(
        workspace=workspace, session=ctx.session, trajectory=trajectory, triggers=triggers
    )
    if proposal is None:
        return
    kinds = ", ".join(t.kind for t in triggers)
    if proposal.status == SkillProposal.Status.QUEUED:
        tasks.proposal_enqueue(proposal=proposal)
        ctx.notes.append(f"skill proposal {proposal.pk} queued ({kinds})")
    else:
        ctx.notes.append(f"skill proposal {proposal.pk} waits for confirmation ({kinds})")


def _skill_name(payload: dict[str, Any]) -> str:
    tool = str(payload.get("tool_name") or payload.get("tool") or "").lower()
    if tool.rsplit("__", 1)[-1] not in _SKILL_TOOLS:
        return ""
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, str):
        return tool_input.strip()
    if isinstance(tool_input, dict):
        for key in _SKILL_INPUT_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                # `/name args` style commands name the skill first.
                return value.strip().lstrip("/").split()[0]
    return ""


def track_use(ctx: HookContext) -> None:
    name = _skill_name(ctx.payload)
    if not name:
        return
    try:
        skill = selectors.skill_get(workspace=ctx.workspace, user=ctx.user, name=name)
    except NotFound:
        return  # a skill the harness has from elsewhere
    services.skill_use_record(skill=skill, session=ctx.session, user=ctx.user)
    ctx.notes.append(f"skill {name} use recorded")


def nudge_block(ctx: HookContext) -> Block | None:
    if ctx.muted or ctx.delegation_depth > 0:
        return None  # a muted session keeps its nudge for later
    nudges = services.nudges_deliver(session=ctx.session, turn=max(ctx.session.turns, 1))
    if not nudges:
        return None
    return Block(name="skills:nudge", order=NUDGE_ORDER, text="\n".join(n.text for n in nudges))


def register() -> None:
    register_observer("skills:review-turn", events=["stop"], fn=review_turn)
    register_observer("skills:track-use", events=["post-tool-use"], fn=track_use)
    register_provider("skills:nudge", events=["user-prompt"], fn=nudge_block)
