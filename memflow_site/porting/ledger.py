"""Imported memories go through the engine (`memory_remember_bulk`: secret filter,
dedupe, state chains, term statistics); this module decides what is new.

The import ledger is the memory's own metadata: every row an importer
creates carries `metadata["import"] = {"format", "key"}`, the key naming the
item in its source (`flymemory:12:…`, `mem0:<id>`, `hme:facts:<sha>`). An item
counts as already present when its key is on a row, when a previous fold
recorded its text (a `DedupeEvent`), or when a current entry has the same
normalised text in the same compartment (same state key for states). So a
second run adds nothing, and a run that stopped half way resumes where it
stopped: each batch commits on its own, its rows and their restored history
in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import transaction

from contexts.errors import MemflowError
from contexts.models import Workspace
from memflow_site.porting.report import ImportReport, Progress, chunks
from memories import lexical, selectors, services
from memories.models import DedupeEvent, Memory
from memories.services.quota import memory_quota_check

if TYPE_CHECKING:
    from django.contrib.auth.models import User

LEDGER = "import"
BATCH = 64


@dataclass
class Incoming:
    """One item of a source, as the engine will be asked to remember it."""

    key: str  # unique in its source: the ledger key
    label: str  # how the report names it
    item: services.RememberInput
    # What the source knew that `RememberInput` cannot carry; put back on the
    # row right after it is created.
    last_accessed: datetime | None = None
    access_count: int | None = None
    expires_at: datetime | None = None
    vector: np.ndarray | None = None  # the source's embedding, when the model is ours
    vector_model: str = ""  # the model that made `vector`


@dataclass
class Stored:
    pks: dict[str, int] = field(default_factory=dict)  # key -> row, stored now or before
    created: set[int] = field(default_factory=set)  # rows this run created


def skip_reason(exc: MemflowError) -> str:
    if isinstance(exc, services.SecretDetected):
        return f"secret refused ({exc.detail})"
    if exc.code == "empty_text":
        return "empty text"
    return exc.detail


def ledger_metadata(metadata: dict[str, Any], *, fmt: str, key: str) -> dict[str, Any]:
    return {**metadata, LEDGER: {"format": fmt, "key": key}}


def history_restore(*, workspace: Workspace, pk: int, **fields: Any) -> None:
    """Put back on a row this import just created what its source knew and no
    service takes (last access, access count, expiry, validity end, …).

    Only for rows created by the running import; `core_move_to_archive`
    restores an archived line's expiry and uses the same way.
    """
    if fields:
        Memory.objects.filter(pk=pk, workspace=workspace).update(**fields)


def present_keys(*, workspace: Workspace, keys: Sequence[str]) -> dict[str, int]:
    """Ledger keys already on a row of the workspace: key -> row."""
    found: dict[str, int] = {}
    for part in chunks(list(dict.fromkeys(keys)), 1000):
        for pk, key in Memory.objects.filter(
            workspace=workspace, **{f"metadata__{LEDGER}__key__in": part}
        ).values_list("pk", f"metadata__{LEDGER}__key"):
            found.setdefault(str(key), int(pk))
    return found


def _present_by_text(*, workspace: Workspace, items: Sequence[Incoming]) -> dict[str, int]:
    """key -> row for items whose text the workspace already holds."""
    found: dict[str, int] = {}
    for part in chunks(list(items), 1000):  # bounded IN lists
        found.update(_present_by_text_part(workspace=workspace, items=part))
    return found


def _present_by_text_part(*, workspace: Workspace, items: Sequence[Incoming]) -> dict[str, int]:
    found: dict[str, int] = {}
    folded: dict[str, int] = {}
    for text, memory_id in DedupeEvent.objects.filter(
        workspace=workspace,
        incoming_text__in={inc.item.text for inc in items},
        undone_at__isnull=True,
    ).values_list("incoming_text", "memory_id"):
        folded.setdefault(text, memory_id)
    plain = [inc for inc in items if not inc.item.state_key]
    hashes = {inc.key: lexical.norm_hash(inc.item.text) for inc in items}
    current = selectors.memories_by_norm_hash(
        workspace=workspace, hashes=[hashes[inc.key] for inc in plain]
    )
    states: dict[str, Memory] = {
        m.state_key: m
        for m in Memory.objects.filter(
            workspace=workspace,
            valid_to__isnull=True,
            state_key__in={inc.item.state_key for inc in items if inc.item.state_key},
        )
    }
    for inc in items:
        if inc.item.text in folded:
            found[inc.key] = folded[inc.item.text]
        elif inc.item.state_key:
            state = states.get(inc.item.state_key)
            if state is not None and state.norm_hash == hashes[inc.key]:
                found[inc.key] = state.pk
        else:
            same = [
                m for m in current.get(hashes[inc.key], []) if m.compartment == inc.item.compartment
            ]
            if same:
                found[inc.key] = same[0].pk
    return found


def remember_incoming(
    *,
    workspace: Workspace,
    user: User | None,
    fmt: str,
    incoming: Sequence[Incoming],
    report: ImportReport,
    bar: Progress,
) -> Stored:
    """Remember every item not already present, in batches that commit one by one."""
    stored = Stored()
    valid: list[Incoming] = []
    seen: set[str] = set()
    for inc in incoming:
        try:
            cleaned = services.memory_validate(workspace=workspace, item=inc.item)
        except MemflowError as exc:
            report.skip(inc.label, skip_reason(exc))
            bar.update()
            continue
        if inc.key in seen:
            report.present["memories"] += 1  # the same item twice in one source
            bar.update()
            continue
        seen.add(inc.key)
        valid.append(replace(inc, item=cleaned))

    stored.pks.update(present_keys(workspace=workspace, keys=[inc.key for inc in valid]))
    stored.pks.update(
        _present_by_text(
            workspace=workspace, items=[inc for inc in valid if inc.key not in stored.pks]
        )
    )
    todo = []
    for inc in valid:
        if inc.key in stored.pks:
            report.present["memories"] += 1
            bar.update()
        else:
            todo.append(inc)

    # Past a quota the import is refused whole, before its first batch commits.
    memory_quota_check(workspace=workspace, texts=[inc.item.text for inc in todo])
    for batch in chunks(todo, BATCH):
        items = [
            replace(inc.item, metadata=ledger_metadata(inc.item.metadata, fmt=fmt, key=inc.key))
            for inc in batch
        ]
        models = {inc.vector_model for inc in batch}
        reuse = len(models) == 1 and all(inc.vector is not None for inc in batch)
        if reuse:
            vectors, vectors_model = np.stack([inc.vector for inc in batch]), models.pop()
        else:
            # Embedded here, outside the transaction below (the slow part).
            embedder = selectors.embedder_for(workspace)
            vectors = embedder.encode_passages([item.text for item in items])
            vectors_model = embedder.model_id
        # The rows and what the source knew about them commit together: an
        # import killed between the two left rows with their history missing,
        # which the next run, finding their ledger keys, never put back.
        with transaction.atomic():
            results = services.memory_remember_bulk(
                workspace=workspace,
                items=items,
                user=user,
                # Vectors of another model than the workspace's are computed again.
                vectors=vectors,
                vectors_model=vectors_model,
            )
            _restore_batch(
                workspace=workspace, batch=batch, results=results, stored=stored, report=report
            )
        bar.update(len(batch))
    return stored


def _restore_batch(
    *,
    workspace: Workspace,
    batch: Sequence[Incoming],
    results: Sequence[services.RememberResult],
    stored: Stored,
    report: ImportReport,
) -> None:
    for inc, result in zip(batch, results, strict=True):
        pk = int(result.memory.pk)
        stored.pks[inc.key] = pk
        if result.outcome != "created":
            report.added["memories folded into existing ones"] += 1
            continue
        report.added["memories"] += 1
        stored.created.add(pk)
        restore: dict[str, Any] = {}
        if inc.last_accessed is not None:
            restore["last_accessed"] = inc.last_accessed
        if inc.access_count:
            restore["access_count"] = inc.access_count
        if inc.expires_at is not None:
            restore["expires_at"] = inc.expires_at
        history_restore(workspace=workspace, pk=pk, **restore)
