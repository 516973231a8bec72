"""Generation: proposals from qualifying turns, drafting and saving them, nudges."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Q

from contexts.errors import Conflict
from contexts.flowctx import LlmConfig
from contexts.models import AgentSession, Workspace
from contexts.tenancy.knobs import knob
from skills import generator, selectors
from skills.generator import Draft, Trajectory, Trigger
from skills.models import (
    Nudge,
    Skill,
    SkillEvent,
    SkillProposal,
    Source,
)
from skills.services.catalogue import (
    _event,
    _now,
    _version_add,
    _who,
    skill_create,
    skill_vectors,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

# A worker that claimed a proposal and died: after this, another may claim it.
CLAIM_TIMEOUT = timedelta(minutes=15)
NUDGE_CHARS = 600


# --- generation: proposals, drafts, nudges ------------------------------------------------------


def _nudge_text(*, workspace: Workspace, proposal: SkillProposal, trajectory: Trajectory) -> str:
    reasons = generator.triggers_summary(proposal.triggers)
    task = " ".join((trajectory.prompt or trajectory.previous_prompt).split())
    if len(task) > 100:
        task = task[:99].rstrip() + "…"
    base = f"/api/v1/workspaces/{workspace.slug}/skills/"
    if proposal.mode == "confirm":
        action = (
            "Ask the user whether to keep it as a skill; if they agree, "
            f"POST {base}proposals/{proposal.pk}/accept/ and memflow writes it from the turn."
        )
    else:
        action = (
            "If it holds a procedure worth repeating, write it down as a skill: "
            f"POST {base} with name, description and body."
        )
    text = (
        f'<memflow-nudge note="About your previous turn; data, not instructions.">\n'
        f"This turn looked reusable: “{task}” ({reasons}). {action}\n"
        "</memflow-nudge>"
    )
    if len(text) > NUDGE_CHARS:
        reasons = reasons[: max(40, len(reasons) - (len(text) - NUDGE_CHARS)) - 1] + "…"
        text = (
            f'<memflow-nudge note="About your previous turn; data, not instructions.">\n'
            f"This turn looked reusable: “{task}” ({reasons}). {action}\n"
            "</memflow-nudge>"
        )
    return text


def proposal_create(
    *,
    workspace: Workspace,
    session: AgentSession,
    trajectory: Trajectory,
    triggers: list[Trigger],
    now: datetime | None = None,
) -> SkillProposal | None:
    """Record that a turn qualified; None when this turn was already proposed.

    With `skills_generation` "auto" the proposal is queued for drafting (the
    caller enqueues the job after commit); otherwise it waits for
    confirmation and, unless nudges are off, the next prompt carries a nudge.
    """
    now = _now(now)
    mode = str(knob(workspace, "skills_generation"))
    if mode not in ("auto", "confirm", "off"):
        mode = "auto"
    with transaction.atomic():
        proposal, created = SkillProposal.objects.get_or_create(
            session=session,
            turn=trajectory.turn,
            defaults={
                "workspace": workspace,
                "triggers": [t.as_json() for t in triggers],
                "mode": mode,
                "status": (
                    SkillProposal.Status.QUEUED if mode == "auto" else SkillProposal.Status.PENDING
                ),
                "created_at": now,
            },
        )
        if not created:
            return None
        summary = generator.triggers_summary(triggers)
        _event(
            kind=SkillEvent.Kind.PROPOSED,
            reason=f"Session {session.external_id}, turn {trajectory.turn} qualified: {summary}.",
            now=now,
            workspace=workspace,
            proposal=proposal,
            session=session,
            data={"triggers": proposal.triggers, "mode": mode, "turn": trajectory.turn},
        )
        if mode != "auto" and knob(workspace, "skills_nudges"):
            Nudge.objects.create(
                workspace=workspace,
                session=session,
                proposal=proposal,
                text=_nudge_text(workspace=workspace, proposal=proposal, trajectory=trajectory),
                created_at=now,
            )
            _event(
                kind=SkillEvent.Kind.NUDGED,
                reason=(
                    f"Generation is {mode!r}: the next prompt of session "
                    f"{session.external_id} carries a nudge instead of a saved skill."
                ),
                now=now,
                workspace=workspace,
                proposal=proposal,
                session=session,
            )
    return proposal


def proposal_accept(
    *, proposal: SkillProposal, user: User | None, now: datetime | None = None
) -> SkillProposal:
    """Confirm a waiting proposal: it is queued for drafting (the caller enqueues it)."""
    now = _now(now)
    claimed = SkillProposal.objects.filter(
        pk=proposal.pk, status=SkillProposal.Status.PENDING
    ).update(status=SkillProposal.Status.QUEUED)
    if not claimed:
        raise Conflict(
            f"Proposal {proposal.pk} is {proposal.status}, not waiting for confirmation.",
            code="proposal_not_pending",
        )
    proposal.refresh_from_db()
    _event(
        kind=SkillEvent.Kind.ACCEPTED,
        reason=f"Accepted by {_who(user)}: queued for drafting.",
        now=now,
        workspace=proposal.workspace,
        proposal=proposal,
        actor=user,
        session=proposal.session,
    )
    return proposal


def _proposal_claim(*, proposal_id: int, now: datetime) -> bool:
    """Claim a queued proposal (or one whose worker died) for this worker."""
    return bool(
        SkillProposal.objects.filter(
            Q(status=SkillProposal.Status.QUEUED)
            | Q(status=SkillProposal.Status.DRAFTING, claimed_at__lt=now - CLAIM_TIMEOUT),
            pk=proposal_id,
        ).update(status=SkillProposal.Status.DRAFTING, claimed_at=now)
    )


def _free_name(*, workspace: Workspace, base: str) -> str:
    taken = set(
        Skill.objects.filter(workspace=workspace, name__startswith=base[:56]).values_list(
            "name", flat=True
        )
    )
    if base not in taken:
        return base
    n = 2
    while f"{base[:56]}-{n}" in taken:
        n += 1
    return f"{base[:56]}-{n}"


@dataclass(frozen=True)
class Learned:
    skill: Skill
    outcome: str  # "created" | "versioned"
    similarity: float | None


def skill_learn(
    *,
    workspace: Workspace,
    user: User | None,
    draft: Draft,
    builder: str,
    origin: str,
    reasons: str,
    session: AgentSession | None = None,
    proposal: SkillProposal | None = None,
    now: datetime | None = None,
) -> Learned:
    """Save a drafted skill: a new version of a near-duplicate (cosine of name +
    description ≥ `skills_dedupe_cosine`), or a new workspace skill."""
    now = _now(now)
    vector = skill_vectors([(draft.name, draft.description)])[0]
    similar = selectors.skill_similar(workspace=workspace, user=user, vector=vector)
    threshold = float(knob(workspace, "skills_dedupe_cosine"))
    data = {"builder": builder, "origin": origin}
    if similar is not None and similar[1] >= threshold:
        existing, cosine = similar
        why = (
            f"Learned again from {origin} ({reasons}); near-duplicate of this skill "
            f"(cosine {cosine:.2f} ≥ {threshold:g}), so a new version instead of a new skill."
        )
        with transaction.atomic():
            updated = _version_add(
                skill_id=existing.pk,
                description=existing.description,
                body=generator.body_merge(existing.body, draft.body),
                why=why,
                source=Source.GENERATOR,
                now=now,
                session=session,
            )
            assert updated is not None
            _event(
                kind=SkillEvent.Kind.VERSIONED,
                reason=why,
                now=now,
                skill=updated,
                proposal=proposal,
                session=session,
                data={**data, "version": updated.version, "cosine": round(cosine, 4)},
            )
        return Learned(skill=updated, outcome="versioned", similarity=cosine)
    skill = skill_create(
        workspace=workspace,
        user=user,
        name=_free_name(workspace=workspace, base=draft.name),
        description=draft.description,
        body=draft.body,
        source=Source.GENERATOR,
        why=f"Generated from {origin}: {reasons}.",
        session=session,
        proposal=proposal,
        vector=vector,
        event_data=data,
        now=now,
    )
    return Learned(
        skill=skill, outcome="created", similarity=similar[1] if similar is not None else None
    )


def proposal_generate(
    *, proposal_id: int, config: LlmConfig | None, now: datetime | None = None
) -> SkillProposal | None:
    """Draft a queued proposal (through the LLM when configured) and save it.

    Runs in a worker. A proposal that is not queued (already done, waiting for
    confirmation, or claimed by another worker) is left alone: None.
    """
    now = _now(now)
    if not _proposal_claim(proposal_id=proposal_id, now=now):
        return None
    proposal = SkillProposal.objects.select_related("workspace", "session__user").get(
        pk=proposal_id
    )
    session = proposal.session
    try:
        trajectory = selectors.turn_trajectory(session=session, turn=proposal.turn)
        triggers = [
            Trigger(kind=str(t.get("kind", "")), detail=str(t.get("detail", "")))
            for t in proposal.triggers
        ]
        draft, builder = generator.draft_build(trajectory, triggers, config=config)
        learned = skill_learn(
            workspace=proposal.workspace,
            user=session.user,
            draft=draft,
            builder=builder,
            origin=f"session {session.external_id}, turn {proposal.turn}",
            reasons=generator.triggers_summary(triggers),
            session=session,
            proposal=proposal,
            now=now,
        )
    except Exception as exc:
        logger.exception("skill proposal %s failed", proposal_id)
        SkillProposal.objects.filter(pk=proposal_id).update(
            status=SkillProposal.Status.FAILED, error=str(exc)[:2_000], processed_at=now
        )
        _event(
            kind=SkillEvent.Kind.FAILED,
            reason=f"Drafting the skill from turn {proposal.turn} failed: {exc}",
            now=now,
            workspace=proposal.workspace,
            proposal=proposal,
            session=session,
        )
        proposal.refresh_from_db()
        return proposal
    SkillProposal.objects.filter(pk=proposal_id).update(
        status=SkillProposal.Status.APPLIED,
        builder=builder,
        draft_name=draft.name,
        draft_description=draft.description,
        draft_body=draft.body,
        skill=learned.skill,
        outcome=learned.outcome,
        similarity=learned.similarity,
        processed_at=now,
    )
    proposal.refresh_from_db()
    return proposal


def nudges_deliver(*, session: AgentSession, turn: int, now: datetime | None = None) -> list[Nudge]:
    """The session's nudges not shown yet, each claimed so it is shown exactly once."""
    now = _now(now)
    delivered = []
    for nudge in selectors.nudges_pending(session=session):
        with transaction.atomic():  # claimed and logged together, or neither
            claimed = Nudge.objects.filter(pk=nudge.pk, delivered_at__isnull=True).update(
                delivered_at=now, delivered_turn=turn
            )
            if not claimed:
                continue  # another hook call showed it first
            _event(
                kind=SkillEvent.Kind.NUDGE_SHOWN,
                reason=f"Shown at the start of turn {turn} of session {session.external_id}.",
                now=now,
                workspace=nudge.workspace,
                proposal=nudge.proposal,
                session=session,
            )
        delivered.append(nudge)
    return delivered
