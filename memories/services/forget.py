"""Forget, restore, purge: a forgotten entry is a tombstone until it is purged.

Forget closes the row (`valid_to`, so every "current" query skips it), marks
it (`forgotten_at`, by whom, why) and takes it out of the lexical statistics;
what it had superseded becomes current again. Restore undoes exactly that
within the workspace's `forget_retention_days`; after that window the daily
cleanup purges it. Purge deletes the row and scrubs the texts its audit rows
kept: who did what, and when, stays.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from contexts.errors import Conflict, NotFound
from contexts.models import Workspace
from contexts.tenancy.audit import Actor, audit_record, audit_scrub
from contexts.tenancy.knobs import knob
from memories.models import Memory
from memories.selectors.entries import visible_to
from memories.services.writes import _update_term_stats, _workspace_lock


def _target(memory_id: int) -> str:
    return f"memory:{memory_id}"


def _locked(workspace: Workspace, memory_id: int) -> Memory:
    locked = Memory.objects.select_for_update().filter(pk=memory_id, workspace=workspace).first()
    if locked is None:
        raise NotFound(f"No memory #{memory_id} in this workspace.", code="memory_not_found")
    return locked


def _tombstone(
    *,
    workspace: Workspace,
    locked: Memory,
    actor: Actor | None,
    reason: str,
    extra: dict[str, Any] | None = None,
) -> None:
    """Forget `locked` (held with select_for_update under the workspace lock)."""
    now = timezone.now()
    was_current = locked.valid_to is None
    latest = (
        Memory.objects.filter(superseded_by=locked, forgotten_at__isnull=True)
        .order_by("-valid_to")
        .first()
    )
    _update_term_stats(workspace, [], [locked])
    if was_current:
        locked.valid_to = max(now, locked.valid_from)
    locked.forgotten_at = now
    locked.forgotten_by = actor.user if actor else None
    locked.forgotten_reason = reason.strip()[:2000]
    locked.forgotten_undo = {
        "was_current": was_current,
        "reopened": latest.pk if was_current and latest else None,
    }
    # Closed before the predecessor reopens: a state key has one current value.
    locked.save(
        update_fields=[
            "valid_to",
            "forgotten_at",
            "forgotten_by",
            "forgotten_reason",
            "forgotten_undo",
            "updated_at",
        ]
    )
    if was_current and latest is not None:
        Memory.objects.filter(pk=latest.pk).update(valid_to=None, superseded_by=None)
    audit_record(
        actor=actor,
        workspace=workspace,
        action="memory.forget",
        target=_target(locked.pk),
        before=locked.text,
        detail={
            "reason": locked.forgotten_reason,
            "reopened": locked.forgotten_undo["reopened"],
            **(extra or {}),
        },
    )


def memory_forget(
    *, workspace: Workspace, memory: Memory, actor: Actor | None = None, reason: str = ""
) -> Memory:
    """Forget an entry: it leaves recall, lists and counts but can be restored
    until its window ends. What it had superseded becomes current again."""
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = _locked(workspace, memory.pk)
        if locked.forgotten_at is not None:
            # As when forget deleted the row: a second forget finds nothing.
            raise NotFound(f"Memory #{memory.pk} is already forgotten.", code="memory_not_found")
        _tombstone(workspace=workspace, locked=locked, actor=actor, reason=reason)
    return locked


def memory_restore(*, workspace: Workspace, memory: Memory, actor: Actor | None = None) -> Memory:
    """Undo a forget. If it was current it is again, and the predecessor that
    forgetting reopened is closed once more; if its state key has a newer
    value since, it comes back as history of that value instead."""
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = _locked(workspace, memory.pk)
        if locked.forgotten_at is None:
            raise Conflict(f"Memory #{memory.pk} is not forgotten.", code="not_forgotten")
        undo = locked.forgotten_undo or {}
        forgotten_at = locked.forgotten_at
        locked.forgotten_at = None
        locked.forgotten_by = None
        locked.forgotten_reason = ""
        locked.forgotten_undo = {}
        if locked.expires_at is not None and locked.expires_at <= timezone.now():
            locked.expires_at = None  # asked back after its expiry: it stays this time
        if undo.get("was_current"):
            _reclaim(workspace=workspace, locked=locked, reopened=undo.get("reopened"))
        locked.save()
        _update_term_stats(workspace, [locked], [])
        audit_record(
            actor=actor,
            workspace=workspace,
            action="memory.restore",
            target=_target(locked.pk),
            after=locked.text,
            detail={"forgotten_at": forgotten_at.isoformat(), "current": locked.valid_to is None},
        )
    return locked


def _reclaim(*, workspace: Workspace, locked: Memory, reopened: int | None) -> None:
    now = timezone.now()
    if reopened is not None:
        Memory.objects.filter(
            pk=reopened, workspace=workspace, valid_to__isnull=True, forgotten_at__isnull=True
        ).update(valid_to=now, superseded_by=locked)
    holder = None
    if locked.state_key:
        holder = Memory.objects.filter(
            workspace=workspace, state_key=locked.state_key, valid_to__isnull=True
        ).first()
    if holder is None:
        locked.valid_to = None
    else:
        locked.superseded_by = holder


def memory_purge(*, workspace: Workspace, memory: Memory, actor: Actor | None = None) -> None:
    """Delete an entry for good (forgetting it first if need be): the row goes,
    and its audit rows lose the texts they kept. Owners only (the caller checks)."""
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = _locked(workspace, memory.pk)
        if locked.forgotten_at is None:
            _tombstone(workspace=workspace, locked=locked, actor=actor, reason="purged")
        forgotten_at = locked.forgotten_at
        audit_scrub(workspace=workspace, target=_target(locked.pk))
        audit_record(
            actor=actor,
            workspace=workspace,
            action="memory.purge",
            target=_target(locked.pk),
            detail={"forgotten_at": forgotten_at.isoformat() if forgotten_at else None},
        )
        locked.delete()


def memory_purge_expired(
    *, workspace: Workspace, now: datetime | None = None, member_id: int | None = None
) -> int:
    """Purge the tombstones older than the workspace's `forget_retention_days`
    (with `member_id`: only those that member may see, as `memory_cleanup` says)."""
    now = now or timezone.now()
    days = float(knob(workspace, "forget_retention_days"))
    # Uses index: memory_forgotten_idx.
    expired = Memory.objects.filter(
        workspace=workspace, forgotten_at__lt=now - timedelta(days=days)
    ).order_by("forgotten_at")
    if member_id is not None:
        expired = expired.filter(visible_to(member_id))
    purged = 0
    for memory in expired:
        memory_purge(workspace=workspace, memory=memory, actor=Actor.system())
        purged += 1
    return purged


def memory_tombstone_decayed(*, workspace: Workspace, ids: list[int]) -> int:
    """Forget the entries the cleanup found decayed or past their expiry (memflow's own
    doing): tombstones like any forget, purged after `forget_retention_days`."""
    forgotten = 0
    for memory in Memory.objects.filter(workspace=workspace, pk__in=ids, forgotten_at=None):
        with transaction.atomic():
            _workspace_lock(workspace)
            locked = Memory.objects.select_for_update().filter(pk=memory.pk).first()
            if locked is None or locked.forgotten_at is not None:
                continue
            expired = locked.expires_at is not None and locked.expires_at <= timezone.now()
            _tombstone(
                workspace=workspace,
                locked=locked,
                actor=Actor.system(),
                reason="expired" if expired else "decayed",
            )
            forgotten += 1
    return forgotten
