"""The memories of an archive taken back: rows read, the ones already present
matched, the rest inserted unfolded, then their links restored by the new ids."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction

from contexts.errors import MemflowError
from contexts.models import (
    AgentSession,
    Workspace,
)
from contexts.tenancy import services as context_services
from memflow_site.porting.archive.tarball import _remap_ids
from memflow_site.porting.ledger import history_restore, skip_reason
from memflow_site.porting.report import ImportReport, Progress, chunks
from memories import selectors, services
from memories.models import Memory, MemoryEvidence
from memories.services.quota import memory_quota_check

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass
class _Row:
    number: int  # line in memories.jsonl
    eid: int
    line: dict[str, Any]
    item: services.RememberInput
    created_at: dt.datetime
    valid_from: dt.datetime
    valid_to: dt.datetime | None
    last_accessed: dt.datetime
    expires_at: dt.datetime | None
    strength: float
    access_count: int
    pinned: bool
    private: bool = False

    @property
    def label(self) -> str:
        return f"memories.jsonl:{self.number} (#{self.eid})"

    @property
    def identity(self) -> tuple[str, dt.datetime, str, str]:
        return (self.item.text, self.created_at, self.item.compartment, self.item.state_key)


@dataclass
class _Imported:
    pks: dict[int, int] = field(default_factory=dict)  # export id -> row
    created: set[int] = field(default_factory=set)


def _time(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    parsed = dt.datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _row(number: int, line: dict[str, Any]) -> _Row:
    created = _time(line["created_at"])
    if created is None:
        raise ValueError("no created_at")
    text = line["text"]
    if not isinstance(text, str):
        raise ValueError("no text")
    metadata = line.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("metadata is not an object")
    valid_from = _time(line.get("valid_from")) or created
    valid_to = _time(line.get("valid_to"))
    if valid_to is not None and valid_to < valid_from:
        raise ValueError("valid_to before valid_from")
    strength = float(line["strength"]) if line.get("strength") is not None else 1.0
    if strength != strength or strength in (float("inf"), float("-inf")):
        raise ValueError("strength is not a number")
    return _Row(
        number=number,
        eid=int(line["id"]),
        line=line,
        item=services.RememberInput(
            text=text,
            compartment=str(line.get("compartment") or ""),
            state_key=str(line.get("state_key") or ""),
            state_value=str(line.get("state_value") or ""),
            source=str(line.get("source") or "import"),
            app=str(line.get("app") or ""),
            metadata=metadata,
            created_at=created,
        ),
        created_at=created,
        valid_from=valid_from,
        valid_to=valid_to,
        last_accessed=_time(line.get("last_accessed")) or created,
        expires_at=_time(line.get("expires_at")),
        strength=strength,
        access_count=max(0, int(line.get("access_count") or 0)),
        pinned=bool(line.get("pinned")),
        private=bool(line.get("private")),
    )


def _memories_import(
    lines: list[tuple[int, dict[str, Any]]],
    *,
    workspace: Workspace,
    report: ImportReport,
    bar: Progress,
) -> _Imported:
    imported = _Imported()
    rows: list[_Row] = []
    for number, line in lines:
        try:
            rows.append(_row(number, line))
        except (KeyError, TypeError, ValueError) as exc:
            report.skip(f"memories.jsonl:{number}", f"unreadable memory ({exc})")
            bar.update()
    rows.sort(key=lambda r: r.eid)
    todo = _rows_to_add(rows, imported, workspace=workspace, report=report, bar=bar)
    _rows_insert(todo, imported, workspace=workspace, report=report, bar=bar)
    return imported


def _rows_to_add(
    rows: list[_Row],
    imported: _Imported,
    *,
    workspace: Workspace,
    report: ImportReport,
    bar: Progress,
) -> list[_Row]:
    """The rows the workspace lacks and would accept; those it has are matched in `imported`."""
    existing: dict[tuple[str, dt.datetime, str, str], list[int]] = defaultdict(list)
    for times in chunks(sorted({r.created_at for r in rows}), 5000):
        for pk, text, created, compartment, state_key in (
            Memory.objects.filter(workspace=workspace, created_at__in=times)
            .order_by("created_at", "id")
            .values_list("pk", "text", "created_at", "compartment", "state_key")
        ):
            existing[(text, created, compartment, state_key)].append(pk)
    current_states = set(
        Memory.objects.filter(workspace=workspace, valid_to__isnull=True)
        .exclude(state_key="")
        .values_list("state_key", flat=True)
    )

    todo: list[_Row] = []
    for row in rows:
        matches = existing.get(row.identity)
        if matches:
            imported.pks[row.eid] = matches.pop(0)
            report.present["memories"] += 1
            bar.update()
            continue
        try:
            services.memory_validate(workspace=workspace, item=row.item)
        except MemflowError as exc:
            report.skip(row.label, skip_reason(exc))
            bar.update()
            continue
        if row.item.state_key and row.valid_to is None:
            if row.item.state_key in current_states:
                report.skip(
                    row.label,
                    f"state key {row.item.state_key!r} has a current value in this workspace",
                )
                bar.update()
                continue
            current_states.add(row.item.state_key)
        todo.append(row)
    return todo


def _rows_insert(
    todo: list[_Row],
    imported: _Imported,
    *,
    workspace: Workspace,
    report: ImportReport,
    bar: Progress,
) -> None:
    # Past a quota the import is refused whole, before its first batch commits.
    memory_quota_check(workspace=workspace, texts=[r.item.text for r in todo])
    users = _users({r.line.get("user") for r in todo}, report)
    sessions: dict[str, AgentSession] = {}
    # The workspace's own embedder: what its recall searches with.
    embedder = selectors.embedder_for(workspace)
    for batch in chunks(todo, 64):
        vectors = embedder.encode([r.item.text for r in batch])
        owners = [users.get(str(r.line.get("user") or "")) for r in batch]
        for row, owner in zip(batch, owners, strict=True):
            external = row.line.get("session")
            if external and external not in sessions:
                # Not `agent_session_get_or_create`: the archive, restored by
                # an operator, says whose the session is (or no one's, for a
                # user this server lacks), so no ownership check applies.
                sessions[external], _ = AgentSession.objects.get_or_create(
                    workspace=workspace,
                    external_id=context_services.session_external_id_clean(str(external)),
                    defaults={"user": owner},
                )
        with transaction.atomic():
            # The engine's own unfolded insert (what consolidation and undo
            # use): an archive holds distinct rows, tombstones included, that
            # dedupe must not fold; the term statistics stay exact.
            services._workspace_lock(workspace)
            for row, vector, owner in zip(batch, vectors, owners, strict=True):
                external = row.line.get("session")
                memory = services._insert_unfolded(
                    workspace=workspace,
                    item=row.item,
                    vector=vector,
                    model_id=embedder.model_id,
                    user=owner,
                    session=sessions.get(external) if external else None,
                    valid_from=row.valid_from,
                    valid_to=row.valid_to,
                    strength=row.strength,
                    access_count=row.access_count,
                    last_accessed=row.last_accessed,
                    pinned=row.pinned,
                    private=row.private,
                    expires_at=row.expires_at,
                )
                imported.pks[row.eid] = memory.pk
                imported.created.add(memory.pk)
                report.added["memories"] += 1
        bar.update(len(batch))


def _users(names: Iterable[Any], report: ImportReport) -> dict[str, User]:
    wanted = {str(n) for n in names if n}
    found: dict[str, User] = {
        u.username: u for u in get_user_model().objects.filter(username__in=wanted)
    }
    for name in sorted(wanted - set(found)):
        report.warn(f"user {name}", "no such user here: their memories are imported without one")
    return found


def _links_import(
    lines: list[tuple[int, dict[str, Any]]],
    imported: _Imported,
    *,
    workspace: Workspace,
    report: ImportReport,
    bar: Progress,
) -> None:
    """Supersede links, evidence links and id-valued metadata, by the new row ids."""
    pks = imported.pks
    wanted = set(pks.values())
    # The whole workspace in one read: an archive can name more rows than a query's IN list.
    state = {
        pk: (superseded_by, metadata)
        for pk, superseded_by, metadata in Memory.objects.filter(workspace=workspace)
        .values_list("pk", "superseded_by_id", "metadata")
        .iterator(chunk_size=5000)
        if pk in wanted
    }
    wanted_evidence: set[tuple[int, int]] = set()
    for _number, line in lines:
        bar.update()
        try:
            eid = int(line["id"])
        except (KeyError, TypeError, ValueError):
            continue
        pk = pks.get(eid)
        if pk is None or pk not in state:
            continue
        superseded_by, metadata = state[pk]
        target_eid = line.get("superseded_by")
        if target_eid is not None:
            target = pks.get(int(target_eid))
            if target is None:
                report.skip(f"supersede link #{eid} -> #{target_eid}", "the successor was skipped")
            elif superseded_by == target:
                report.present["supersede links"] += 1
            elif superseded_by is None:
                history_restore(workspace=workspace, pk=pk, superseded_by_id=target)
                report.added["supersede links"] += 1
            else:
                report.skip(
                    f"supersede link #{eid} -> #{target_eid}", "already superseded by another"
                )
        for evidence_eid in line.get("evidence") or []:
            evidence = pks.get(int(evidence_eid))
            if evidence is None:
                report.skip(f"evidence link #{eid} -> #{evidence_eid}", "the evidence was skipped")
            elif evidence != pk:
                wanted_evidence.add((pk, evidence))
        raw = line.get("metadata") or {}
        if isinstance(raw, dict) and (pk in imported.created or metadata == raw):
            mapped = _remap_ids(raw, pks)
            if mapped != metadata:
                history_restore(workspace=workspace, pk=pk, metadata=mapped)
    have = set(
        MemoryEvidence.objects.filter(conclusion__workspace=workspace).values_list(
            "conclusion_id", "evidence_id"
        )
    )
    new = sorted(wanted_evidence - have)
    MemoryEvidence.objects.bulk_create(
        [MemoryEvidence(conclusion_id=c, evidence_id=e) for c, e in new], ignore_conflicts=True
    )
    report.added["evidence links"] += len(new)
    report.present["evidence links"] += len(wanted_evidence & have)
