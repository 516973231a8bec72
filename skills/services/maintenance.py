"""Maintenance: the optimizer (rewrites from feedback) and the curator (stale,
archive, merge duplicates, the skill limit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F

from contexts.flowctx import LlmConfig
from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from skills import generator, selectors
from skills.generator import Feedback
from skills.models import (
    Skill,
    SkillEvent,
    SkillUse,
    Source,
)
from skills.services.catalogue import (
    _event,
    _now,
    _scope_filter,
    _version_add,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# --- the optimizer ----------------------------------------------------------------------------------


def skill_optimize(
    *, skill_id: int, version: int, config: LlmConfig | None, now: datetime | None = None
) -> Skill | None:
    """Rewrite a skill's body from the feedback its current version received.

    Runs in a worker. None when the skill has moved past `version`, or does
    not (or no longer) have enough feedback: a duplicated job does nothing.
    """
    now = _now(now)
    skill = Skill.objects.select_related("workspace").filter(pk=skill_id).first()
    if skill is None or skill.version != version or not selectors.skill_optimize_due(skill=skill):
        return None
    rated = list(
        SkillUse.objects.filter(skill=skill, version=version)
        .exclude(feedback="")
        .order_by("created_at", "id")
    )
    feedback = [Feedback(outcome=u.outcome, text=u.feedback) for u in rated]
    body, builder = generator.body_optimize(skill.body, feedback, config=config)
    succeeded = sum(u.outcome == SkillUse.Outcome.SUCCESS for u in rated)
    failed = sum(u.outcome == SkillUse.Outcome.FAILURE for u in rated)
    why = (
        f"Optimized after {len(rated)} uses with feedback since v{version} "
        f"({succeeded} succeeded, {failed} failed)."
    )
    with transaction.atomic():
        updated = _version_add(
            skill_id=skill.pk,
            description=skill.description,
            body=body,
            why=why,
            source=Source.OPTIMIZER,
            now=now,
            expected_version=version,
        )
        if updated is None:
            return None
        _event(
            kind=SkillEvent.Kind.OPTIMIZED,
            reason=why,
            now=now,
            skill=updated,
            data={
                "builder": builder,
                "from_version": version,
                "version": updated.version,
                "uses": [u.pk for u in rated],
            },
        )
    return updated


# --- the curator ------------------------------------------------------------------------------------


@dataclass
class CurateReport:
    staled: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    merged: list[tuple[str, str]] = field(default_factory=list)  # (absorbed, kept)
    over_limit: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return len(self.staled) + len(self.archived) + len(self.merged) + len(self.over_limit)


def _idle_days(skill: Skill, now: datetime) -> int:
    return (now - skill.active_at).days


def _set_status(
    skill: Skill, *, status: str, now: datetime, kind: str, reason: str, **data: Any
) -> bool:
    """Move a skill the curator read to `status`, unless it changed since (used,
    restored, edited): then it is left alone and False is returned."""
    moved = Skill.objects.filter(
        pk=skill.pk, status=skill.status, active_at=skill.active_at
    ).update(status=status, updated_at=now)
    if not moved:
        return False
    skill.status = status
    _event(kind=kind, reason=reason, now=now, skill=skill, data=data)
    return True


def skills_curate(
    *, workspace: Workspace | None, owner: User | None = None, now: datetime | None = None
) -> CurateReport:
    """One curator pass over a workspace's skills (or, with no workspace, one
    user's global skills, with the default thresholds).

    In order: archive skills idle `skills_archive_days`, mark those idle
    `skills_stale_days` stale, merge semantic duplicates (the less used into
    the more used; both histories stay), then archive the least used beyond
    `skills_max`.
    """
    now = _now(now)
    report = CurateReport()
    if not knob(workspace, "skills_curator"):
        return report
    scope = _scope_filter(workspace=workspace, owner=owner)
    # Uses index: skill_curator_idx.
    live = list(
        Skill.objects.filter(scope)
        .exclude(status=Skill.Status.ARCHIVED)
        .select_related("workspace")
        .order_by("active_at", "pk")
    )
    _retire_idle(live, workspace=workspace, now=now, report=report)
    live = [s for s in live if s.status != Skill.Status.ARCHIVED]
    live = _merge_duplicates(
        live,
        threshold=float(knob(workspace, "skills_merge_cosine")),
        now=now,
        report=report,
    )
    _archive_over_limit(live, limit=int(knob(workspace, "skills_max")), now=now, report=report)
    return report


def _retire_idle(
    live: list[Skill], *, workspace: Workspace | None, now: datetime, report: CurateReport
) -> None:
    """Archive the skills idle `skills_archive_days`, mark stale those idle `skills_stale_days`."""
    stale_days = int(knob(workspace, "skills_stale_days"))
    archive_days = int(knob(workspace, "skills_archive_days"))
    for skill in live:
        idle = _idle_days(skill, now)
        if archive_days > 0 and idle >= archive_days:
            status, kind, word, after = (
                Skill.Status.ARCHIVED,
                SkillEvent.Kind.ARCHIVED,
                "archive",
                archive_days,
            )
            bucket = report.archived
        elif stale_days > 0 and idle >= stale_days and skill.status == Skill.Status.ACTIVE:
            status, kind, word, after = (
                Skill.Status.STALE,
                SkillEvent.Kind.STALED,
                "stale",
                stale_days,
            )
            bucket = report.staled
        else:
            continue
        since = skill.active_at.date().isoformat()
        if _set_status(
            skill,
            status=status,
            now=now,
            kind=kind,
            reason=f"Unused for {idle} days (since {since}; {word} after {after}).",
            idle_days=idle,
        ):
            bucket.append(skill.name)


def _archive_over_limit(
    live: list[Skill], *, limit: int, now: datetime, report: CurateReport
) -> None:
    """Past `limit` live skills, archive the least used (fewest uses, then longest unused)."""
    if limit <= 0 or len(live) <= limit:
        return
    ranked = sorted(
        live,
        key=lambda s: (
            s.use_count,
            s.last_used_at or datetime.min.replace(tzinfo=now.tzinfo),
            s.active_at,
            s.pk,
        ),
    )
    for skill in ranked[: len(live) - limit]:
        if _set_status(
            skill,
            status=Skill.Status.ARCHIVED,
            now=now,
            kind=SkillEvent.Kind.ARCHIVED,
            reason=(
                f"Over the limit of {limit} skills: among the least used "
                f"({skill.use_count} uses"
                + (
                    f", last on {skill.last_used_at.date().isoformat()})."
                    if skill.last_used_at
                    else ", never used)."
                )
            ),
            limit=limit,
            use_count=skill.use_count,
        ):
            report.over_limit.append(skill.name)


def _merge_duplicates(
    live: list[Skill], *, threshold: float, now: datetime, report: CurateReport
) -> list[Skill]:
    """Fold each pair of near-identical skills into the more used one; the live skills after."""
    absorbed: set[int] = set()
    for pair in selectors.skill_duplicate_pairs(skills=live, threshold=threshold):
        if pair.first.pk in absorbed or pair.second.pk in absorbed:
            continue
        kept, gone = sorted(
            (pair.first, pair.second), key=lambda s: (-s.use_count, s.created_at, s.pk)
        )
        why = (
            f"Merged with `{gone.name}` (cosine {pair.cosine:.2f}): its body folded in; "
            f"its own history (v1 to v{gone.version}) stays with it."
        )
        with transaction.atomic():
            # Re-read under the lock: `kept` may have absorbed another skill already.
            current = Skill.objects.select_for_update().get(pk=kept.pk)
            updated = _version_add(
                skill_id=kept.pk,
                description=current.description,
                body=generator.body_merge(current.body, gone.body),
                why=why,
                source=Source.CURATOR,
                now=now,
                merged_from=gone,
                touch=False,  # housekeeping, not a use: staleness runs on
            )
            assert updated is not None
            Skill.objects.filter(pk=kept.pk).update(
                use_count=F("use_count") + gone.use_count,
                success_count=F("success_count") + gone.success_count,
                failure_count=F("failure_count") + gone.failure_count,
            )
            Skill.objects.filter(pk=gone.pk).update(
                status=Skill.Status.ARCHIVED, merged_into=kept, updated_at=now
            )
            _event(
                kind=SkillEvent.Kind.MERGED,
                reason=why,
                now=now,
                skill=updated,
                data={"absorbed": gone.name, "version": updated.version, "cosine": pair.cosine},
            )
            _event(
                kind=SkillEvent.Kind.MERGED,
                reason=(
                    f"Merged into `{kept.name}` (cosine {pair.cosine:.2f}), which is used more; "
                    "archived, with its history kept."
                ),
                now=now,
                skill=gone,
                data={"merged_into": kept.name, "cosine": pair.cosine},
            )
        kept.use_count += gone.use_count
        absorbed.add(gone.pk)
        report.merged.append((gone.name, kept.name))
    return [s for s in live if s.pk not in absorbed]
