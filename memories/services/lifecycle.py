"""An entry's life after remember: supersede, edit, forget, pin, consolidate, clean up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from contexts.errors import Conflict, Invalid, NotFound
from contexts.models import AgentSession, Workspace
from memories import selectors
from memories.models import Memory, MemoryEvidence
from memories.services.dedupe import _insert_row
from memories.services.inputs import RememberInput, memory_validate
from memories.services.writes import (
    _set_text,
    _update_term_stats,
    _workspace_lock,
    embedded_and_locked,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def memory_supersede(
    *,
    workspace: Workspace,
    memory: Memory,
    by: Memory | None = None,
    text: str | None = None,
    user: User | None = None,
    session: AgentSession | None = None,
) -> Memory:
    """Retire `memory` in favour of `by` (an existing entry) or a new text."""
    if (by is None) == (text is None):
        raise Invalid("Give either `by` (an id) or `text`, not both.", code="supersede_target")
    if memory.valid_to is not None:
        raise Conflict(f"Memory #{memory.pk} is already superseded.", code="already_superseded")
    if by is not None:
        if by.workspace_id != workspace.pk:
            raise NotFound(f"No memory #{by.pk} in this workspace.", code="memory_not_found")
        if by.pk == memory.pk:
            raise Invalid("A memory cannot supersede itself.", code="supersede_self")
        if by.valid_to is not None:
            raise Conflict(f"Memory #{by.pk} is itself superseded.", code="already_superseded")
    else:
        item = memory_validate(
            workspace=workspace,
            item=RememberInput(
                text=text or "", compartment=memory.compartment, source=Memory.Source.MODEL
            ),
        )
    with embedded_and_locked(workspace=workspace, texts=[item.text] if by is None else []) as new:
        locked = Memory.objects.select_for_update().get(pk=memory.pk)
        if locked.valid_to is not None:
            raise Conflict(f"Memory #{memory.pk} is already superseded.", code="already_superseded")
        if by is None:
            embedder, [vector] = new.serving()
            by = _insert_row(
                workspace=workspace,
                item=item,
                vector=vector,
                model_id=embedder.model_id,
                user=user,
                session=session,
            )
        else:
            # What was checked before the lock may have changed since: two requests
            # superseding two entries by each other both passed it, and both retired.
            by = Memory.objects.select_for_update().get(pk=by.pk)
            if by.valid_to is not None:
                raise Conflict(f"Memory #{by.pk} is itself superseded.", code="already_superseded")
            if _reaches(start=by, target=locked):
                raise Conflict("That supersede would make a cycle.", code="supersede_cycle")
        now = timezone.now()
        if locked.state_key and not by.state_key:
            # The successor takes over the state key, so the chain stays one chain.
            Memory.objects.filter(pk=locked.pk).update(valid_to=now, superseded_by=by)
            Memory.objects.filter(pk=by.pk).update(state_key=locked.state_key)
            by.state_key = locked.state_key
        else:
            Memory.objects.filter(pk=locked.pk).update(
                valid_to=max(now, locked.valid_from), superseded_by=by
            )
    memory.refresh_from_db()
    return by


def _reaches(*, start: Memory, target: Memory) -> bool:
    """Does following `superseded_by` from `start` arrive at `target`?"""
    seen = set()
    current: Memory | None = start
    while current is not None and current.pk not in seen:
        if current.pk == target.pk:
            return True
        seen.add(current.pk)
        current = current.superseded_by
    return False


def memory_update(
    *, workspace: Workspace, memory: Memory, text: str | None = None, compartment: str | None = None
) -> Memory:
    """Edit an entry in place (a correction, not a new fact): re-embeds on new text."""
    if text is not None:
        text = memory_validate(workspace=workspace, item=RememberInput(text=text)).text
    with embedded_and_locked(workspace=workspace, texts=[text] if text is not None else []) as new:
        locked = Memory.objects.select_for_update().get(pk=memory.pk)
        if compartment is not None:
            locked.compartment = compartment.strip().lower()[:64]
        if text is not None and text != locked.text:
            embedder, [vector] = new.serving()
            old = Memory(lex=locked.lex, lex_len=locked.lex_len)
            _set_text(locked, text, vector, embedder.model_id)
            _update_term_stats(workspace, [locked], [old])
        locked.save()
    return locked


def memory_forget(*, workspace: Workspace, memory: Memory) -> None:
    """Delete an entry for good. What it had superseded becomes current again."""
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = (
            Memory.objects.select_for_update().filter(pk=memory.pk, workspace=workspace).first()
        )
        if locked is None:
            raise NotFound(f"No memory #{memory.pk} in this workspace.", code="memory_not_found")
        predecessors = list(Memory.objects.filter(superseded_by=locked).order_by("-valid_to"))
        _update_term_stats(workspace, [], [locked])
        was_current = locked.valid_to is None
        locked.delete()
        if was_current and predecessors:
            # Reopen the latest predecessor (a state key keeps one current value).
            latest = predecessors[0]
            Memory.objects.filter(pk=latest.pk).update(valid_to=None, superseded_by=None)


def memory_pin(*, memory: Memory, pinned: bool) -> Memory:
    Memory.objects.filter(pk=memory.pk).update(pinned=pinned)
    memory.pinned = pinned
    return memory


# --- consolidation ------------------------------------------------------------------


def memory_consolidate(
    *,
    workspace: Workspace,
    ids: Sequence[int],
    conclusion: str,
    compartment: str = "",
    user: User | None = None,
    session: AgentSession | None = None,
    app: str = "",
) -> Memory:
    """A new entry resting on ≥ 2 existing ones; the originals stay as evidence."""
    unique_ids = list(dict.fromkeys(ids))
    if len(unique_ids) < 2:
        raise Invalid("Consolidation needs at least two distinct memory ids.", code="too_few_ids")
    evidence = list(Memory.objects.filter(workspace=workspace, pk__in=unique_ids))
    missing = sorted(set(unique_ids) - {m.pk for m in evidence})
    if missing:
        raise NotFound(f"No memories {missing} in this workspace.", code="memory_not_found")
    item = memory_validate(
        workspace=workspace,
        item=RememberInput(
            text=conclusion, compartment=compartment, source=Memory.Source.CONSOLIDATION, app=app
        ),
    )
    with embedded_and_locked(workspace=workspace, texts=[item.text]) as new:
        embedder, [vector] = new.serving()
        memory = _insert_row(
            workspace=workspace,
            item=item,
            vector=vector,
            model_id=embedder.model_id,
            user=user,
            session=session,
            metadata={"evidence_ids": unique_ids},
        )
        MemoryEvidence.objects.bulk_create(
            [MemoryEvidence(conclusion=memory, evidence=e) for e in evidence]
        )
    return memory


@dataclass
class CleanupReport:
    dry_run: bool
    candidates: list[tuple[int, float, str]]
    removed: int


def memory_cleanup(
    *, workspace: Workspace, dry_run: bool = True, now: datetime | None = None
) -> CleanupReport:
    """Remove entries whose retention fell below the workspace's thresholds.

    Entries that are evidence of a consolidation are kept: abstraction never
    destroys its material.
    """
    now = now or timezone.now()
    found = selectors.memory_below_retention(workspace=workspace, now=now)
    protected = set(
        MemoryEvidence.objects.filter(evidence_id__in=[i for i, _, _ in found]).values_list(
            "evidence_id", flat=True
        )
    )
    candidates = [row for row in found if row[0] not in protected]
    removed = 0
    if not dry_run:
        for memory in Memory.objects.filter(pk__in=[i for i, _, _ in candidates]):
            memory_forget(workspace=workspace, memory=memory)
            removed += 1
    return CleanupReport(dry_run=dry_run, candidates=candidates, removed=removed)
