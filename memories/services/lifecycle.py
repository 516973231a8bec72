"""An entry's life after remember: supersede, edit, pin, consolidate, clean up.

Every change a person or key makes is written to the audit trail here, with
the `Actor` the interface passed down (forget, restore and purge are in
`services.forget`).

Provenance is the same whichever interface made a change:

- `source` says what kind of write produced the text: `model` for a text a
  caller chose to write (a remember, a replacement given to supersede, an
  edit keeps the entry's own), `consolidation` for a conclusion, `hook` and
  `import` for mechanical captures. A person writing in the dashboard is a
  caller like a model calling the API: `model`.
- `app` names the agent harness the text belongs to: the one the caller
  gave (or its session's), else inherited: a replacement text takes the app
  of the entry it replaces, a conclusion the app its evidence shares. It is
  never the interface: "dashboard", "rest", "mcp" are the audit row's
  `origin`, not an app.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.utils import timezone

from contexts.errors import Conflict, Invalid, NotFound
from contexts.models import AgentSession, Workspace
from contexts.tenancy.audit import Actor, audit_record
from memories import selectors
from memories.models import Memory, MemoryEvidence
from memories.selectors.entries import visible_to
from memories.services.dedupe import _insert_row
from memories.services.forget import memory_purge_expired, memory_tombstone_decayed
from memories.services.inputs import RememberInput, memory_validate
from memories.services.writes import (
    _set_text,
    _update_term_stats,
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
    app: str = "",
    actor: Actor | None = None,
) -> Memory:
    """Retire `memory` in favour of `by` (an existing entry) or a new text.

    A new text's `app` is `app` (or the session's), else the retired entry's.
    """
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
                text=text or "",
                compartment=memory.compartment,
                source=Memory.Source.MODEL,
                app=app or (session.app if session else "") or memory.app,
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
        audit_record(
            actor=actor or Actor(origin="system", user=user),
            workspace=workspace,
            action="memory.supersede",
            target=f"memory:{locked.pk}",
            before=locked.text,
            after=by.text,
            detail={"by": by.pk, "new": text is not None},
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
    *,
    workspace: Workspace,
    memory: Memory,
    text: str | None = None,
    compartment: str | None = None,
    actor: Actor | None = None,
) -> Memory:
    """Edit an entry in place (a correction, not a new fact): re-embeds on new text.

    The audit row keeps the text before and after (and the compartments).
    """
    if text is not None:
        text = memory_validate(workspace=workspace, item=RememberInput(text=text)).text
    with embedded_and_locked(workspace=workspace, texts=[text] if text is not None else []) as new:
        locked = Memory.objects.select_for_update().get(pk=memory.pk)
        before_text, before_compartment = locked.text, locked.compartment
        if compartment is not None:
            locked.compartment = compartment.strip().lower()[:64]
        if text is not None and text != locked.text:
            embedder, [vector] = new.serving()
            old = Memory(lex=locked.lex, lex_len=locked.lex_len)
            _set_text(locked, text, vector, embedder.model_id)
            _update_term_stats(workspace, [locked], [old])
        locked.save()
        if (before_text, before_compartment) != (locked.text, locked.compartment):
            audit_record(
                actor=actor,
                workspace=workspace,
                action="memory.edit",
                target=f"memory:{locked.pk}",
                before=before_text,
                after=locked.text,
                detail={"compartment": [before_compartment, locked.compartment]},
            )
    return locked


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
    actor: Actor | None = None,
) -> Memory:
    """A new entry resting on ≥ 2 existing ones; the originals stay as evidence.

    Its `app` is `app` (or the session's), else the one its evidence shares.
    """
    unique_ids = list(dict.fromkeys(ids))
    if len(unique_ids) < 2:
        raise Invalid("Consolidation needs at least two distinct memory ids.", code="too_few_ids")
    reader = user or (actor.user if actor else None)
    evidence = list(
        Memory.objects.filter(
            visible_to(reader.pk if reader else None), workspace=workspace, pk__in=unique_ids
        )
    )
    missing = sorted(set(unique_ids) - {m.pk for m in evidence if m.forgotten_at is None})
    if missing:
        raise NotFound(f"No memories {missing} in this workspace.", code="memory_not_found")
    apps = {m.app for m in evidence}
    app = app or (session.app if session else "") or (apps.pop() if len(apps) == 1 else "")
    item = memory_validate(
        workspace=workspace,
        item=RememberInput(
            text=conclusion,
            compartment=compartment,
            source=Memory.Source.CONSOLIDATION,
            app=app,
            # A conclusion drawn from private evidence would repeat it to everyone.
            private=any(m.private for m in evidence),
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
        audit_record(
            actor=actor or Actor(origin="system", user=user),
            workspace=workspace,
            action="memory.consolidate",
            target=f"memory:{memory.pk}",
            after=memory.text,
            detail={"evidence_ids": unique_ids},
        )
    return memory


@dataclass
class CleanupReport:
    dry_run: bool
    candidates: list[tuple[int, float, str]]
    removed: int
    purged: int = 0


def memory_cleanup(
    *,
    workspace: Workspace,
    dry_run: bool = True,
    now: datetime | None = None,
    member_id: int | None = None,
) -> CleanupReport:
    """Forget entries whose retention fell below the workspace's thresholds,
    and purge the tombstones older than `forget_retention_days`.

    Entries that are evidence of a consolidation are kept: abstraction never
    destroys its material. A decayed entry is forgotten, not deleted, so it
    can be restored within the window like any other.

    `member_id`: a member's run (REST, MCP) lists, counts and forgets only the
    entries that member may see, so its totals never tell of another's
    private ones; those wait for memflow's own daily run (None), which takes all.
    """
    now = now or timezone.now()
    found = selectors.memory_below_retention(workspace=workspace, now=now)
    if member_id is not None:
        seen = set(
            Memory.objects.filter(
                visible_to(member_id), workspace=workspace, pk__in=[i for i, _, _ in found]
            ).values_list("pk", flat=True)
        )
        found = [row for row in found if row[0] in seen]
    protected = set(
        MemoryEvidence.objects.filter(evidence_id__in=[i for i, _, _ in found]).values_list(
            "evidence_id", flat=True
        )
    )
    candidates = [row for row in found if row[0] not in protected]
    if dry_run:
        return CleanupReport(dry_run=True, candidates=candidates, removed=0)
    removed = memory_tombstone_decayed(workspace=workspace, ids=[i for i, _, _ in candidates])
    purged = memory_purge_expired(workspace=workspace, now=now, member_id=member_id)
    return CleanupReport(dry_run=False, candidates=candidates, removed=removed, purged=purged)
