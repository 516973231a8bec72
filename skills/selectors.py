"""Reads of the skills app, each scoped to what the caller may see.

A caller in a workspace sees that workspace's skills and their own global
skills (`owner`, no workspace); never another user's global skills.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from django.db.models import Q, QuerySet
from pgvector.django import CosineDistance

from contexts.errors import Invalid, NotFound
from contexts.flowctx import note_events
from contexts.models import AgentSession, SessionEvent, Workspace
from contexts.tenancy.knobs import knob
from skills.folder import SkillFile
from skills.generator import Trajectory
from skills.models import Nudge, Skill, SkillEvent, SkillProposal, SkillUse, SkillVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SCOPES = ("workspace", "user")
# `status` filters of the catalogue: "available" is what a harness may load.
STATUS_FILTERS = ("available", "active", "stale", "archived", "all")
_TURN_KINDS = ("user-prompt", "post-tool-use", "stop")


def _user_pk(user: User | None) -> int | None:
    return int(user.pk) if user is not None and user.pk is not None else None


def skill_scope_q(*, workspace: Workspace, user: User | None, scope: str | None = None) -> Q:
    """The skills visible in `workspace` to `user`: the workspace's and the user's global ones."""
    in_workspace = Q(workspace=workspace)
    owned = Q(workspace__isnull=True, owner_id=_user_pk(user)) if _user_pk(user) else Q(pk__in=[])
    if scope == "workspace":
        return in_workspace
    if scope == "user":
        return owned
    return in_workspace | owned


def skill_list(
    *,
    workspace: Workspace,
    user: User | None,
    status: str = "available",
    scope: str | None = None,
) -> QuerySet[Skill]:
    # Uses index: skill_name_unique_in_workspace (and …_for_owner), in name order.
    skills = Skill.objects.filter(skill_scope_q(workspace=workspace, user=user, scope=scope))
    if status == "available":
        skills = skills.exclude(status=Skill.Status.ARCHIVED)
    elif status != "all":
        skills = skills.filter(status=status)
    return skills.order_by("name", "workspace_id")


def skill_get(
    *, workspace: Workspace, user: User | None, name: str, scope: str | None = None
) -> Skill:
    """The skill called `name` here: the workspace's, else the user's global one
    (or exactly the given `scope`). NotFound otherwise."""
    if scope is not None and scope not in SCOPES:
        raise Invalid(f"scope is one of {', '.join(SCOPES)}.", code="invalid_scope")
    candidates = Skill.objects.filter(
        skill_scope_q(workspace=workspace, user=user, scope=scope), name=name
    ).select_related("workspace", "owner", "merged_into")
    # A workspace skill shadows a global one of the same name.
    skill = sorted(candidates, key=lambda s: s.workspace_id is None)[:1]
    if not skill:
        raise NotFound(f"No skill called {name!r} here.", code="skill_not_found")
    return skill[0]


def skill_versions(*, skill: Skill) -> QuerySet[SkillVersion]:
    # Uses index: skillversion_unique.
    return SkillVersion.objects.filter(skill=skill).select_related("merged_from", "created_by")


def skill_uses(*, skill: Skill) -> QuerySet[SkillUse]:
    return SkillUse.objects.filter(skill=skill).select_related("session")


def skill_events(
    *, workspace: Workspace, user: User | None, skill: Skill | None = None
) -> QuerySet[SkillEvent]:
    """The evolution log here: the workspace's events and those of the user's global skills."""
    if skill is not None:
        # Uses index: skillevent_skill_idx.
        events = SkillEvent.objects.filter(skill=skill)
    else:
        # Uses index: skillevent_recent_idx.
        mine = (
            Q(workspace__isnull=True, owner_id=_user_pk(user)) if _user_pk(user) else Q(pk__in=[])
        )
        events = SkillEvent.objects.filter(Q(workspace=workspace) | mine)
    return events.select_related("skill", "actor", "session").order_by("-created_at", "-id")


def skill_optimize_due(*, skill: Skill) -> bool:
    """Whether the skill has enough uses with feedback since its last version."""
    workspace = skill.workspace if skill.workspace_id else None
    if not knob(workspace, "skills_optimization"):
        return False
    needed = int(knob(workspace, "skills_optimize_after"))
    # Uses index: skilluse_feedback_idx.
    rated = SkillUse.objects.filter(skill=skill, version=skill.version).exclude(feedback="")
    return needed > 0 and rated.count() >= needed


def skill_similar(
    *,
    workspace: Workspace,
    user: User | None,
    vector: np.ndarray,
    exclude_id: int | None = None,
) -> tuple[Skill, float] | None:
    """The closest non-archived skill here to `vector` (a unit "name: description"
    embedding), with its cosine; None when there is none.

    A workspace holds at most `skills_max` live skills, so an exact scan is
    both exact and fast; an HNSW index would only add filtered-search misses.
    """
    candidates = (
        Skill.objects.filter(skill_scope_q(workspace=workspace, user=user))
        .exclude(status=Skill.Status.ARCHIVED)
        .filter(embedding__isnull=False)
    )
    if exclude_id is not None:
        candidates = candidates.exclude(pk=exclude_id)
    best = (
        candidates.annotate(distance=CosineDistance("embedding", vector.tolist()))
        .order_by("distance", "pk")
        .first()
    )
    if best is None:
        return None
    distance: float = best.distance
    return best, 1.0 - float(distance)


@dataclass(frozen=True)
class DuplicatePair:
    first: Skill
    second: Skill
    cosine: float


def skill_duplicate_pairs(*, skills: list[Skill], threshold: float) -> list[DuplicatePair]:
    """Pairs of `skills` whose embeddings are at least `threshold` alike, closest first."""
    embedded = [s for s in skills if s.embedding is not None]
    if len(embedded) < 2:
        return []
    matrix = np.array([np.asarray(s.embedding, dtype=np.float32) for s in embedded])
    cosines = matrix @ matrix.T
    pairs = [
        DuplicatePair(first=embedded[i], second=embedded[j], cosine=float(cosines[i, j]))
        for i in range(len(embedded))
        for j in range(i + 1, len(embedded))
        if cosines[i, j] >= threshold
    ]
    return sorted(pairs, key=lambda p: (-p.cosine, p.first.pk, p.second.pk))


def skills_export_files(
    *, workspace: Workspace, user: User | None, status: str = "available"
) -> list[SkillFile]:
    """The catalogue as SKILL.md files; a workspace skill wins a name shared with a global one."""
    files: dict[str, SkillFile] = {}
    for skill in sorted(
        skill_list(workspace=workspace, user=user, status=status),
        key=lambda s: (s.name, s.workspace_id is None),
    ):
        if skill.name not in files:
            files[skill.name] = SkillFile(
                name=skill.name,
                description=skill.description,
                body=skill.body,
                metadata=dict(skill.metadata or {}),
            )
    return list(files.values())


# --- trajectories ---------------------------------------------------------------------------------


def turn_trajectory(*, session: AgentSession, turn: int) -> Trajectory:
    """One user turn of `session`, read from its event log."""
    # Uses index: sessionevent_kind_idx (session, kind, at), one range per kind;
    # a turn is at most a few hundred rows.
    rows = list(
        SessionEvent.objects.filter(session=session, turn=turn, kind__in=_TURN_KINDS)
        .order_by("at", "id")
        .values_list("kind", "payload", "at")
    )
    events = note_events((kind, payload) for kind, payload, _ in rows)
    previous = (
        SessionEvent.objects.filter(session=session, turn=turn - 1, kind="user-prompt")
        .order_by("-at", "-id")
        .values_list("payload", flat=True)
        .first()
    )
    previous_prompt = ""
    if isinstance(previous, dict) and isinstance(previous.get("prompt"), str):
        previous_prompt = previous["prompt"].strip()
    prompts = [e.text for e in events if e.kind == "prompt"]
    assistant = [e.text for e in events if e.kind == "assistant"]
    times = [at for _, _, at in rows]
    return Trajectory(
        session=session.external_id,
        turn=turn,
        prompt=prompts[0] if prompts else "",
        previous_prompt=previous_prompt,
        tools=tuple(e for e in events if e.kind == "tool"),
        assistant=assistant[-1] if assistant else "",
        seconds=(max(times) - min(times)).total_seconds() if times else 0.0,
    )


# --- proposals and nudges -------------------------------------------------------------------------


def proposal_list(*, workspace: Workspace, status: str | None = None) -> QuerySet[SkillProposal]:
    # Uses index: skillproposal_recent_idx.
    proposals = SkillProposal.objects.filter(workspace=workspace)
    if status:
        proposals = proposals.filter(status=status)
    return proposals.select_related("session", "skill", "nudge").order_by("-created_at", "-id")


def proposal_get(*, workspace: Workspace, proposal_id: int) -> SkillProposal:
    proposal = (
        SkillProposal.objects.filter(workspace=workspace, pk=proposal_id)
        .select_related("session", "skill", "workspace")
        .first()
    )
    if proposal is None:
        raise NotFound(f"No skill proposal {proposal_id} here.", code="proposal_not_found")
    return proposal


def nudges_pending(*, session: AgentSession) -> QuerySet[Nudge]:
    # Uses index: nudge_pending_idx.
    return Nudge.objects.filter(session=session, delivered_at__isnull=True).order_by(
        "created_at", "id"
    )
