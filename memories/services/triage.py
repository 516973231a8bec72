"""Settling the dashboard's queue: conflict clusters and fading entries.

Each decision is stored (`TriageDecision`) so a settled item does not come
back, and written to the audit trail. Consolidate, supersede and forget go
through their own services, which keep their own audit rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from django.db import transaction

from contexts.errors import Invalid, NotFound
from contexts.models import Workspace
from contexts.tenancy.audit import Actor, audit_record
from memories.models import Memory, TriageDecision
from memories.selectors.entries import visible_to
from memories.services.forget import memory_forget
from memories.services.lifecycle import memory_consolidate, memory_pin, memory_supersede

Decision = TriageDecision.Decision
CONFLICT_DECISIONS = (
    Decision.CONSOLIDATE,
    Decision.SUPERSEDE,
    Decision.KEEP_BOTH,
    Decision.DISMISS,
)
FADING_DECISIONS = (Decision.KEEP, Decision.LET_FADE, Decision.FORGET)


def _store(
    *,
    workspace: Workspace,
    kind: str,
    groups: Sequence[list[int]],
    decision: str,
    actor: Actor | None,
) -> None:
    user = actor.user if actor else None
    for ids in groups:
        TriageDecision.objects.update_or_create(
            workspace=workspace,
            kind=kind,
            memory_ids=sorted(ids),
            defaults={"decision": decision, "user": user},
        )


def memory_conflict_resolve(
    *,
    workspace: Workspace,
    ids: Sequence[int],
    decision: str,
    actor: Actor | None = None,
    conclusion: str = "",
    keep: int | None = None,
) -> Memory | None:
    """Settle a conflict cluster (`ids`, ≥ 2 entries).

    consolidate: a new entry from `conclusion` rests on them all; supersede:
    `keep` replaces the others; keep_both, dismiss: nothing changes but the
    queue. Returns the entry that now holds (conclusion or `keep`), if any.
    """
    unique = sorted(set(ids))
    if len(unique) < 2:
        raise Invalid("A conflict needs at least two memory ids.", code="too_few_ids")
    if decision not in CONFLICT_DECISIONS:
        raise Invalid(f"Unknown decision {decision!r}.", code="invalid_decision")
    found = {
        m.pk: m
        for m in Memory.objects.filter(
            visible_to(actor.user.pk if actor and actor.user else None),
            workspace=workspace,
            pk__in=unique,
            valid_to__isnull=True,
            forgotten_at__isnull=True,
        )
    }
    missing = [i for i in unique if i not in found]
    if missing:
        raise NotFound(f"No current memories {missing} in this workspace.", code="memory_not_found")
    result: Memory | None = None
    if decision == Decision.CONSOLIDATE:
        if not conclusion.strip():
            raise Invalid("Write the conclusion that replaces them.", code="conclusion_required")
        result = memory_consolidate(
            workspace=workspace, ids=unique, conclusion=conclusion, actor=actor
        )
    elif decision == Decision.SUPERSEDE:
        if keep not in found:
            raise Invalid("Choose which memory to keep.", code="keep_required")
        result = found[keep]
        for other in unique:
            if other != keep:
                memory_supersede(workspace=workspace, memory=found[other], by=result, actor=actor)
    with transaction.atomic():
        _store(
            workspace=workspace,
            kind=TriageDecision.Kind.CONFLICT,
            groups=[list(p) for p in combinations(unique, 2)],
            decision=decision,
            actor=actor,
        )
        audit_record(
            actor=actor,
            workspace=workspace,
            action=f"triage.{decision}",
            target=f"memory:{unique[0]}",
            detail={"ids": unique, "result": result.pk if result else None},
        )
    return result


def memory_fading_resolve(
    *, workspace: Workspace, memory: Memory, decision: str, actor: Actor | None = None
) -> None:
    """Settle a fading entry: keep (pin it), let it fade (cleanup may take it), forget it."""
    if decision not in FADING_DECISIONS:
        raise Invalid(f"Unknown decision {decision!r}.", code="invalid_decision")
    if decision == Decision.KEEP:
        memory_pin(memory=memory, pinned=True)
    elif decision == Decision.FORGET:
        memory_forget(workspace=workspace, memory=memory, actor=actor, reason="fading")
    with transaction.atomic():
        _store(
            workspace=workspace,
            kind=TriageDecision.Kind.FADING,
            groups=[[memory.pk]],
            decision=decision,
            actor=actor,
        )
        audit_record(
            actor=actor,
            workspace=workspace,
            action=f"triage.{decision}",
            target=f"memory:{memory.pk}",
        )
