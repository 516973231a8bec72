"""Skills and their versions: create, edit, archive, restore, uses, import.

Every service takes `now` so that clocks are the caller's (tests pass a
fixed one), writes a `SkillEvent` with its reason, and computes embeddings
before a transaction opens, never inside one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from contexts.errors import Conflict, Invalid
from contexts.models import AgentSession, Workspace
from memories.embeddings import get_embedder
from skills import generator, selectors
from skills.folder import FolderError, SkillFile, archive_read
from skills.models import (
    DESCRIPTION_MAX,
    Skill,
    SkillEvent,
    SkillProposal,
    SkillUse,
    SkillVersion,
    Source,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Names the REST routes use under skills/; a skill cannot be called that.
RESERVED_NAMES = frozenset({"export", "import", "events", "proposals"})
MAX_BODY_CHARS = 100_000
MAX_WHY_CHARS = 2_000


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


def _who(user: User | None) -> str:
    return user.get_username() if user is not None else "memflow"


def embed_text(name: str, description: str) -> str:
    """What a skill's embedding is computed from: its catalogue line."""
    return f"{name.replace('-', ' ')}: {description}"


def skill_vectors(items: list[tuple[str, str]]) -> np.ndarray:
    """Unit vectors of (name, description) pairs, one row each."""
    return get_embedder().encode([embed_text(name, description) for name, description in items])


def _validate(*, name: str, description: str, body: str) -> None:
    if not generator.name_valid(name):
        raise Invalid(
            "A skill name is lowercase letters, digits and single hyphens, at most 64 characters.",
            code="invalid_name",
        )
    if name in RESERVED_NAMES:
        raise Invalid(f"{name!r} is reserved by the API.", code="invalid_name")
    if not description.strip() or "\n" in description.strip():
        raise Invalid("A description is one non-empty line.", code="invalid_description")
    if len(description) > DESCRIPTION_MAX:
        raise Invalid(
            f"A description is at most {DESCRIPTION_MAX} characters.", code="invalid_description"
        )
    if not body.strip():
        raise Invalid("A skill needs a body.", code="invalid_body")
    if len(body) > MAX_BODY_CHARS:
        raise Invalid(f"A body is at most {MAX_BODY_CHARS} characters.", code="invalid_body")


def _event(
    *,
    kind: str,
    reason: str,
    now: datetime,
    skill: Skill | None = None,
    workspace: Workspace | None = None,
    proposal: SkillProposal | None = None,
    actor: User | None = None,
    session: AgentSession | None = None,
    data: dict[str, Any] | None = None,
) -> SkillEvent:
    owner_id = None
    if skill is not None:
        workspace = skill.workspace if skill.workspace_id is not None else None
        owner_id = skill.owner_id
    return SkillEvent.objects.create(
        workspace=workspace,
        owner_id=owner_id,
        skill=skill,
        proposal=proposal,
        kind=kind,
        reason=reason[:4_000],
        data=data or {},
        actor=actor,
        session=session,
        created_at=now,
    )


# --- skills and versions ------------------------------------------------------------------------


def _scope_filter(*, workspace: Workspace | None, owner: User | None) -> Q:
    if workspace is not None:
        return Q(workspace=workspace)
    return Q(workspace__isnull=True, owner=owner)


def skill_create(
    *,
    workspace: Workspace,
    user: User | None,
    name: str,
    description: str,
    body: str,
    scope: str = "workspace",
    source: str = Source.PERSON,
    why: str = "",
    metadata: dict[str, Any] | None = None,
    session: AgentSession | None = None,
    proposal: SkillProposal | None = None,
    vector: np.ndarray | None = None,
    event_data: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> Skill:
    """A new skill at version 1, in the workspace or (scope "user") global to `user`."""
    now = _now(now)
    description = " ".join(description.split())
    body = body.strip()
    _validate(name=name, description=description, body=body)
    if scope not in selectors.SCOPES:
        raise Invalid("scope is 'workspace' or 'user'.", code="invalid_scope")
    if scope == "user" and user is None:
        raise Invalid("A global skill needs a user.", code="invalid_scope")
    in_workspace = scope == "workspace"
    if vector is None:
        vector = skill_vectors([(name, description)])[0]
    why = why.strip() or f"Created by {_who(user)}."
    try:
        with transaction.atomic():
            skill = Skill.objects.create(
                workspace=workspace if in_workspace else None,
                owner=None if in_workspace else user,
                name=name,
                description=description,
                body=body,
                metadata=metadata or {},
                origin=source,
                embedding=vector.tolist(),
                created_by=user,
                active_at=now,
                created_at=now,
                updated_at=now,
            )
            SkillVersion.objects.create(
                skill=skill,
                version=1,
                description=description,
                body=body,
                why=why[:MAX_WHY_CHARS],
                source=source,
                created_by=user,
                session=session,
                created_at=now,
            )
            _event(
                kind=SkillEvent.Kind.CREATED,
                reason=why,
                now=now,
                skill=skill,
                proposal=proposal,
                actor=user,
                session=session,
                data={**(event_data or {}), "source": source, "version": 1},
            )
    except IntegrityError:
        raise Conflict(
            f"A skill called {name!r} already exists in this scope.", code="skill_exists"
        ) from None
    return skill


def _version_add(
    *,
    skill_id: int,
    description: str,
    body: str,
    why: str,
    source: str,
    now: datetime,
    user: User | None = None,
    session: AgentSession | None = None,
    vector: np.ndarray | None = None,
    metadata: dict[str, Any] | None = None,
    merged_from: Skill | None = None,
    expected_version: int | None = None,
    touch: bool = True,
) -> Skill | None:
    """Write a new version and make it current. None when `expected_version` is
    given and the skill has moved past it (someone else wrote a version first).
    `touch` restarts the curator's idle clock (not for the curator's own merges).

    Call inside `transaction.atomic()`: the skill row is locked until commit.
    """
    locked = Skill.objects.select_for_update().get(pk=skill_id)
    if expected_version is not None and locked.version != expected_version:
        return None
    locked.version += 1
    locked.description = description
    locked.body = body
    if vector is not None:
        locked.embedding = vector.tolist()
    if metadata is not None:
        locked.metadata = metadata
    if touch:  # a sign of life: the curator's idle clock restarts
        locked.active_at = now
    locked.updated_at = now
    locked.save()
    SkillVersion.objects.create(
        skill=locked,
        version=locked.version,
        description=description,
        body=body,
        why=why[:MAX_WHY_CHARS],
        source=source,
        merged_from=merged_from,
        created_by=user,
        session=session,
        created_at=now,
    )
    return locked


def skill_edit(
    *,
    skill: Skill,
    user: User | None,
    why: str,
    description: str | None = None,
    body: str | None = None,
    session: AgentSession | None = None,
    now: datetime | None = None,
) -> Skill:
    """A new version with the given description and/or body; `why` is required."""
    now = _now(now)
    why = why.strip()
    if not why:
        raise Invalid("Say why the skill changes (`why`).", code="why_required")
    new_description = (
        " ".join(description.split()) if description is not None else skill.description
    )
    new_body = body.strip() if body is not None else skill.body
    _validate(name=skill.name, description=new_description, body=new_body)
    if new_description == skill.description and new_body == skill.body:
        raise Invalid("Nothing changes: same description and body.", code="no_change")
    vector = (
        skill_vectors([(skill.name, new_description)])[0]
        if new_description != skill.description
        else None
    )
    with transaction.atomic():
        updated = _version_add(
            skill_id=skill.pk,
            description=new_description,
            body=new_body,
            why=why,
            source=Source.PERSON,
            now=now,
            user=user,
            session=session,
            vector=vector,
        )
        assert updated is not None
        _event(
            kind=SkillEvent.Kind.VERSIONED,
            reason=f"Edited by {_who(user)}: {why}",
            now=now,
            skill=updated,
            actor=user,
            session=session,
            data={"version": updated.version, "source": Source.PERSON},
        )
    return updated


def skill_archive(
    *, skill: Skill, user: User | None, reason: str = "", now: datetime | None = None
) -> Skill:
    """Take a skill out of the catalogue (idempotent); its history stays."""
    now = _now(now)
    with transaction.atomic():
        locked = Skill.objects.select_for_update().get(pk=skill.pk)
        if locked.status == Skill.Status.ARCHIVED:
            return locked
        locked.status = Skill.Status.ARCHIVED
        locked.updated_at = now
        locked.save(update_fields=["status", "updated_at"])
        text = f"Archived by {_who(user)}" + (f": {reason.strip()}" if reason.strip() else ".")
        _event(kind=SkillEvent.Kind.ARCHIVED, reason=text, now=now, skill=locked, actor=user)
    return locked


def skill_restore(
    *, skill: Skill, user: User | None, reason: str = "", now: datetime | None = None
) -> Skill:
    """Bring a stale or archived skill back to active (idempotent); the curator's
    clock restarts from now."""
    now = _now(now)
    with transaction.atomic():
        locked = Skill.objects.select_for_update().get(pk=skill.pk)
        if locked.status == Skill.Status.ACTIVE:
            return locked
        locked.status = Skill.Status.ACTIVE
        locked.merged_into = None
        locked.active_at = now
        locked.updated_at = now
        locked.save(update_fields=["status", "merged_into", "active_at", "updated_at"])
        text = f"Restored by {_who(user)}" + (f": {reason.strip()}" if reason.strip() else ".")
        _event(kind=SkillEvent.Kind.RESTORED, reason=text, now=now, skill=locked, actor=user)
    return locked


# --- uses -----------------------------------------------------------------------------------------


def _touch_used(
    locked: Skill, *, now: datetime, new_use: bool, session: AgentSession | None
) -> None:
    """Count a use on a locked skill; a stale skill that is used is active again."""
    if new_use:
        locked.use_count += 1
    locked.last_used_at = now
    locked.active_at = now
    if locked.status == Skill.Status.STALE:
        locked.status = Skill.Status.ACTIVE
        _event(
            kind=SkillEvent.Kind.REVIVED,
            reason="Used again while stale: back to active.",
            now=now,
            skill=locked,
            session=session,
        )
    locked.save(
        update_fields=[
            "use_count",
            "success_count",
            "failure_count",
            "last_used_at",
            "active_at",
            "status",
        ]
    )


def skill_use_record(
    *,
    skill: Skill,
    session: AgentSession | None,
    user: User | None,
    now: datetime | None = None,
) -> SkillUse:
    """A session loaded the skill: one use, outcome pending until reported."""
    now = _now(now)
    with transaction.atomic():
        locked = Skill.objects.select_for_update().get(pk=skill.pk)
        use = SkillUse.objects.create(
            skill=locked, version=locked.version, session=session, user=user, created_at=now
        )
        _touch_used(locked, now=now, new_use=True, session=session)
    return use


def skill_feedback_record(
    *,
    skill: Skill,
    session: AgentSession | None,
    user: User | None,
    outcome: str,
    feedback: str = "",
    now: datetime | None = None,
) -> SkillUse:
    """How a use went. It completes the session's latest pending use of the
    skill, if there is one; otherwise it is a use of its own."""
    now = _now(now)
    if outcome not in (SkillUse.Outcome.SUCCESS, SkillUse.Outcome.FAILURE):
        raise Invalid("outcome is 'success' or 'failure'.", code="invalid_outcome")
    with transaction.atomic():
        locked = Skill.objects.select_for_update().get(pk=skill.pk)
        use = None
        if session is not None:
            # Uses index: skilluse_pending_idx.
            use = (
                SkillUse.objects.filter(skill=locked, session=session, outcome="pending")
                .order_by("-created_at", "-id")
                .first()
            )
        if use is None:
            use = SkillUse(skill=locked, version=locked.version, session=session, created_at=now)
        use.user = user or use.user
        use.outcome = outcome
        use.feedback = feedback.strip()
        use.rated_at = now
        new_use = use.pk is None
        use.save()
        if outcome == SkillUse.Outcome.SUCCESS:
            locked.success_count += 1
        else:
            locked.failure_count += 1
        _touch_used(locked, now=now, new_use=new_use, session=session)
    return use


# --- import -----------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    versioned: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


def skills_import(
    *,
    workspace: Workspace,
    user: User | None,
    data: bytes,
    scope: str = "workspace",
    now: datetime | None = None,
) -> ImportReport:
    """Skills from a tar(.gz) of a skills folder (`<name>/SKILL.md`, or dsh's
    `<name>.md`): new names are created, changed ones get a new version."""
    now = _now(now)
    if scope not in selectors.SCOPES:
        raise Invalid("scope is 'workspace' or 'user'.", code="invalid_scope")
    try:
        read = archive_read(data)
    except FolderError as exc:
        raise Invalid(str(exc), code="invalid_archive") from None
    report = ImportReport(skipped=list(read.skipped))
    files = _importable(read.files, report)
    if not files:
        return report
    vectors = skill_vectors([(f.name, f.description) for f in files])
    owner_scope = _scope_filter(
        workspace=workspace if scope == "workspace" else None,
        owner=user if scope == "user" else None,
    )
    names = [f.name for f in files]
    existing = {s.name: s for s in Skill.objects.filter(owner_scope, name__in=names)}
    for item, vector in zip(files, vectors, strict=True):
        why = f"Imported from a skills folder ({item.path}) by {_who(user)}."
        skill = existing.get(item.name)
        if skill is None:
            skill_create(
                workspace=workspace,
                user=user,
                name=item.name,
                description=item.description,
                body=item.body,
                scope=scope,
                source=Source.IMPORT,
                why=why,
                metadata=item.metadata,
                vector=vector,
                now=now,
            )
            report.created.append(item.name)
        elif (skill.description, skill.body, skill.metadata or {}) == (
            item.description,
            item.body,
            item.metadata,
        ):
            report.unchanged.append(item.name)
        else:
            _import_version(skill, item, user=user, vector=vector, why=why, now=now)
            report.versioned.append(item.name)
    return report


def _importable(files: list[SkillFile], report: ImportReport) -> list[SkillFile]:
    """The valid files, each name once; the others are reported as skipped."""
    kept = []
    seen: set[str] = set()
    for item in files:
        try:
            _validate(name=item.name, description=item.description, body=item.body)
        except Invalid as exc:
            report.skipped.append({"path": item.path, "reason": exc.detail})
            continue
        if item.name in seen:
            report.skipped.append({"path": item.path, "reason": "the same name appears twice"})
            continue
        seen.add(item.name)
        kept.append(item)
    return kept


def _import_version(
    skill: Skill, item: SkillFile, *, user: User | None, vector: Any, why: str, now: datetime
) -> None:
    """A new version of `skill` with the imported file's text, and its event."""
    with transaction.atomic():
        updated = _version_add(
            skill_id=skill.pk,
            description=item.description,
            body=item.body,
            why=why,
            source=Source.IMPORT,
            now=now,
            user=user,
            vector=vector,
            metadata=item.metadata,
        )
        assert updated is not None
        _event(
            kind=SkillEvent.Kind.VERSIONED,
            reason=why,
            now=now,
            skill=updated,
            actor=user,
            data={"version": updated.version, "source": Source.IMPORT},
        )
