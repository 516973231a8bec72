"""Background jobs of the skills app (django-q2): drafting proposals, the
optimizer, the daily curator. Each loads by id and calls one service."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from contexts.flowctx import LlmConfig
from contexts.models import Workspace
from skills import selectors, services
from skills.models import Skill, SkillProposal

logger = logging.getLogger(__name__)


def proposal_enqueue(*, proposal: SkillProposal) -> None:
    """Queue the drafting of a queued proposal, once the caller's transaction commits."""
    proposal_id = proposal.pk
    transaction.on_commit(
        lambda: async_task(
            "skills.tasks.proposal_generate", proposal_id, task_name=f"skill-proposal-{proposal_id}"
        )
    )


def proposal_generate(proposal_id: int) -> str:
    proposal = services.proposal_generate(proposal_id=proposal_id, config=LlmConfig.from_settings())
    return proposal.status if proposal is not None else "skipped"


def optimize_enqueue_if_due(*, skill: Skill) -> bool:
    """Queue a rewrite when the skill has collected enough feedback since its last version."""
    if not selectors.skill_optimize_due(skill=skill):
        return False
    skill_id, version = skill.pk, skill.version
    transaction.on_commit(
        lambda: async_task(
            "skills.tasks.skill_optimize",
            skill_id,
            version,
            task_name=f"skill-optimize-{skill_id}-v{version}",
        )
    )
    return True


def skill_optimize(skill_id: int, version: int) -> int | None:
    skill = services.skill_optimize(
        skill_id=skill_id, version=version, config=LlmConfig.from_settings()
    )
    return skill.version if skill is not None else None


def curate_all() -> int:
    """The daily schedule: one curator pass per workspace and per user with global skills."""
    now = timezone.now()
    changed = 0
    workspace_ids = Skill.objects.filter(workspace__isnull=False).values_list(
        "workspace_id", flat=True
    )
    for workspace in Workspace.objects.filter(pk__in=workspace_ids):
        changed += services.skills_curate(workspace=workspace, now=now).changed
    owner_ids = Skill.objects.filter(workspace__isnull=True).values_list("owner_id", flat=True)
    for owner in get_user_model().objects.filter(pk__in=owner_ids):
        changed += services.skills_curate(workspace=None, owner=owner, now=now).changed
    if changed:
        logger.info("skill curator changed %d skills", changed)
    return changed
