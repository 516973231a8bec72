"""Use of entries: rehearsal, the injection ledger, and recall as the interfaces answer it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from contexts.models import AgentSession, Workspace
from contexts.tenancy.knobs import knob
from memories import rendering, selectors
from memories.models import InjectionEvent, Memory
from memories.provenance import work_provenance
from memories.services.writes import _workspace_lock

if TYPE_CHECKING:
    pass


def memory_rehearse(
    *, ids: Sequence[int], now: datetime | None = None, workspace: Workspace | None = None
) -> None:
    """The entries a recall returned were just used: they fade more slowly.

    Takes the workspace lock before the rows, as every other writer of entries
    does: a hook that rehearses then captures would otherwise deadlock with
    another session's capture holding the lock and wanting a rehearsed row.
    With `workspace` (all `ids` are its entries), no query asks whose they are.
    """
    if not ids:
        return
    # No savepoint inside a caller's transaction: one UPDATE has nothing to undo halfway.
    with transaction.atomic(savepoint=False):
        if workspace is not None:
            _workspace_lock(workspace)
            _rehearse_rows(workspace, ids, now or timezone.now())
            return
        rows = Memory.objects.filter(pk__in=list(ids))
        for workspace_id in sorted(set(rows.values_list("workspace_id", flat=True))):
            _workspace_lock(Workspace(pk=workspace_id))
        rows.update(access_count=F("access_count") + 1, last_accessed=now or timezone.now())


def _rehearse_rows(workspace: Workspace, ids: Sequence[int], now: datetime) -> None:
    """memory_rehearse's UPDATE; the caller holds the workspace lock."""
    if ids:
        Memory.objects.filter(workspace=workspace, pk__in=list(ids)).update(
            access_count=F("access_count") + 1, last_accessed=now
        )


def ledger_record(
    *, workspace: Workspace, session: AgentSession | None, memory_ids: Sequence[int], kind: str
) -> None:
    """Write ledger marks. `injected` always; a use only for ids injected into that session before."""
    if session is None or not memory_ids:
        return
    ids = list(dict.fromkeys(int(i) for i in memory_ids))
    if kind != InjectionEvent.Kind.INJECTED:
        injected = set(
            InjectionEvent.objects.filter(
                session=session, memory_id__in=ids, kind=InjectionEvent.Kind.INJECTED
            ).values_list("memory_id", flat=True)
        )
        ids = [i for i in ids if i in injected]
    now = timezone.now()
    InjectionEvent.objects.bulk_create(
        [
            InjectionEvent(workspace=workspace, session=session, memory_id=i, kind=kind, at=now)
            for i in ids
        ]
    )


def memory_recall_answer(
    *,
    workspace: Workspace,
    session: AgentSession | None,
    values: dict[str, Any],
    filters: selectors.MemoryFilters,
) -> tuple[dict[str, Any], list[selectors.Hit], datetime]:
    """Recall as the API and the MCP tools answer it, in one of three shapes
    (`values`: mode full|index|block, k, query, budget_chars, inject).

    Rehearses what it returns and records it in the session's ledger as
    recalled (and injected, with `inject`). Returns the answer, the hits and
    the time it used.
    """
    now = timezone.now()
    mode = values["mode"]
    k = values["k"] if mode == "full" else max(values["k"], 20)
    result = selectors.memory_recall(
        workspace=workspace,
        query=values["query"],
        k=k,
        filters=filters,
        now=now,
        prompts=selectors.PromptRanking(session_id=session.pk if session else None),
        # A session's own project first (selectors.projects).
        project=(filters.project or (session.project if session else "")) or None,
    )
    memories = [hit.memory for hit in result.hits]
    body: dict[str, Any] = {
        "mode": mode,
        "fusion": {
            "lexical_weight": round(result.fusion.lexical_weight, 3),
            "reason": result.fusion.reason,
        },
    }
    if mode == "full":
        ids = [int(m.pk) for m in memories]
        body["results"] = [
            {
                "id": hit.memory.pk,
                "text": hit.memory.text,
                "score": round(hit.score, 4),
                "age": rendering.age_label(hit.memory.created_at, now),
                "source": hit.memory.source,
                "app": hit.memory.app,
                "compartment": hit.memory.compartment,
                "state_key": hit.memory.state_key,
                "created_at": hit.memory.created_at,
                "valid_to": hit.memory.valid_to,
                "retention": round(hit.retention, 4),
                # Of two conflicting entries, which is current (selectors.currency).
                "stale_by": result.currency.stale.get(int(hit.memory.pk)),
                **({"work": w} if (w := work_provenance(hit.memory)) else {}),
            }
            for hit in result.hits
        ]
    elif mode == "index":
        budget = values.get("budget_chars") or int(knob(workspace, "recall_index_chars"))
        body["block"], ids = rendering.index_block(
            memories, now=now, budget_chars=budget, marks=result.currency.marks()
        )
    else:
        budget = values.get("budget_chars") or int(knob(workspace, "recall_block_chars"))
        body["block"], ids = rendering.recall_block(
            memories, now=now, budget_chars=budget, marks=result.currency.marks()
        )
    body["ids"] = ids
    memory_rehearse(ids=ids, now=now, workspace=workspace)
    ledger_record(
        workspace=workspace, session=session, memory_ids=ids, kind=InjectionEvent.Kind.RECALLED
    )
    if values.get("inject"):
        ledger_record(
            workspace=workspace, session=session, memory_ids=ids, kind=InjectionEvent.Kind.INJECTED
        )
    return body, result.hits, now
