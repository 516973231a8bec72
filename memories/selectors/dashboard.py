"""Reads the dashboard needs beyond `memories.selectors`: growth, state
histories, the ledger over time and by source, a session's ledger marks.

Everything here is scoped by a workspace the caller already checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connection
from django.db.models import Count, FloatField, Max, Min, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncDate

from contexts.dashboard import charts
from contexts.models import AgentSession, Workspace
from contexts.tenancy.knobs import knob
from memories.decay import retention_sql
from memories.models import InjectionEvent, Memory
from memories.selectors import HIDDEN_IDS_SQL, Hit, MemoryFilters, memory_list, visible_to

_LEAN = ("embedding", "embedding_next", "lex")  # columns no dashboard page reads


def memories_by_id(
    *, workspace: Workspace, ids: Iterable[int], viewer_id: int | None = None
) -> dict[int, Memory]:
    """The workspace's memories among `ids` `viewer_id` may see (forgotten ones are
    simply absent)."""
    wanted = {int(i) for i in ids}
    if not wanted:
        return {}
    return {
        m.pk: m
        for m in Memory.objects.filter(
            visible_to(viewer_id), workspace=workspace, pk__in=wanted, forgotten_at__isnull=True
        ).defer(*_LEAN)
    }


# --- growth -----------------------------------------------------------------------------


def memory_daily_counts(
    *, workspace: Workspace, since: datetime, viewer_id: int | None
) -> dict[date, int]:
    """Memories `viewer_id` may see created per day since `since` (current or not)."""
    # Uses index: memory_recent_idx.
    rows = (
        Memory.objects.filter(
            visible_to(viewer_id),
            workspace=workspace,
            created_at__gte=since,
            forgotten_at__isnull=True,
        )
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    )
    return {row["day"]: row["n"] for row in rows}


def memory_count_before(*, workspace: Workspace, before: datetime, viewer_id: int | None) -> int:
    return Memory.objects.filter(
        visible_to(viewer_id), workspace=workspace, created_at__lt=before, forgotten_at__isnull=True
    ).count()


# --- states -----------------------------------------------------------------------------


def state_histories(*, workspace: Workspace, keys: Iterable[str]) -> dict[str, list[Memory]]:
    """Each key's chain, oldest first, for a page of keys in one query."""
    wanted = [k for k in keys if k]
    found: dict[str, list[Memory]] = {k: [] for k in wanted}
    if not wanted:
        return found
    # Uses index: memory_state_history_idx.
    rows = (
        Memory.objects.filter(workspace=workspace, state_key__in=wanted)
        .select_related("session")
        .defer(*_LEAN)
        .order_by("state_key", "valid_from", "id")
    )
    for memory in rows:
        found[memory.state_key].append(memory)
    return found


# --- the ledger ------------------------------------------------------------------------
#
# A "use" is counted as `ledger_summary` counts it: an (session, memory id)
# pair that was injected and then expanded, recalled or superseded in that
# same session (`ledger_record` only writes uses for injected ids anyway).
# Another member's private entries are left out (`hidden_from`; binds `viewer`).

_LEDGER_PAIRS = f"""
    WITH hidden AS ({HIDDEN_IDS_SQL}), injected AS (
        SELECT session_id, memory_id, MIN(at) AS first_at
        FROM memories_injectionevent
        WHERE workspace_id = %(ws)s AND kind = 'injected'
          AND memory_id NOT IN (SELECT id FROM hidden)
        GROUP BY session_id, memory_id
    ), used AS (
        SELECT DISTINCT session_id, memory_id
        FROM memories_injectionevent
        WHERE workspace_id = %(ws)s AND kind <> 'injected'
    )
"""


@dataclass(frozen=True)
class LedgerRow:
    label: str
    injected: int
    used: int

    @property
    def rate(self) -> float:
        return self.used / self.injected if self.injected else 0.0

    @property
    def rate_label(self) -> str:
        return charts.shown(self.rate, percent=True)


def ledger_daily(
    *, workspace: Workspace, since: datetime, viewer_id: int | None
) -> dict[date, LedgerRow]:
    """Injected pairs by the day of their first injection, and how many were then used."""
    # Raw SQL: a pair-level anti/semi join the ORM would spell as two
    # correlated subqueries per row. Uses index: injection_workspace_idx.
    sql = (
        _LEDGER_PAIRS
        + """
        SELECT (i.first_at AT TIME ZONE 'UTC')::date AS day, COUNT(*),
               COUNT(u.memory_id)
        FROM injected i
        LEFT JOIN used u USING (session_id, memory_id)
        WHERE i.first_at >= %(since)s
        GROUP BY day ORDER BY day
    """
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {"ws": workspace.pk, "since": since, "viewer": viewer_id})
        rows = cursor.fetchall()
    return {d: LedgerRow(label=d.isoformat(), injected=n, used=u) for d, n, u in rows}


def ledger_by_source(
    *, workspace: Workspace, viewer_id: int | None, since: datetime | None = None
) -> list[LedgerRow]:
    """Injected pairs (first injected since `since`, if given) and uses by the memory's
    source; a forgotten memory counts as 'forgotten'."""
    # Raw SQL: as in ledger_daily, joined to the memory for its source.
    sql = (
        _LEDGER_PAIRS
        + """
        SELECT COALESCE(m.source, 'forgotten') AS source, COUNT(*), COUNT(u.memory_id)
        FROM injected i
        LEFT JOIN used u USING (session_id, memory_id)
        LEFT JOIN memories_memory m ON m.id = i.memory_id AND m.workspace_id = %(ws)s
            AND m.forgotten_at IS NULL
        WHERE %(since)s::timestamptz IS NULL OR i.first_at >= %(since)s
        GROUP BY 1 ORDER BY 2 DESC, 1
    """
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {"ws": workspace.pk, "since": since, "viewer": viewer_id})
        return [LedgerRow(label=s, injected=n, used=u) for s, n, u in cursor.fetchall()]


@dataclass(frozen=True)
class NeverUsed:
    memory_id: int
    injections: int
    sessions: int
    last_at: datetime


def ledger_never_used(
    *, workspace: Workspace, viewer_id: int | None, limit: int = 20
) -> list[NeverUsed]:
    """Ids injected again and again but never used in any session: context spent for nothing
    (another member's private entries left out)."""
    # Raw SQL: a hashed NOT IN over the workspace's use events.
    sql = f"""
        SELECT memory_id, COUNT(*) AS n, COUNT(DISTINCT session_id), MAX(at)
        FROM memories_injectionevent
        WHERE workspace_id = %(ws)s AND kind = 'injected'
          AND memory_id NOT IN ({HIDDEN_IDS_SQL})
          AND memory_id NOT IN (
              SELECT memory_id FROM memories_injectionevent
              WHERE workspace_id = %(ws)s AND kind <> 'injected'
          )
        GROUP BY memory_id
        ORDER BY n DESC, memory_id
        LIMIT %(limit)s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, {"ws": workspace.pk, "limit": limit, "viewer": viewer_id})
        return [
            NeverUsed(memory_id=int(i), injections=n, sessions=s, last_at=at)
            for i, n, s, at in cursor.fetchall()
        ]


@dataclass(frozen=True)
class Mark:
    kind: str
    at: datetime


def ledger_marks(*, session: AgentSession) -> dict[int, list[Mark]]:
    """Every ledger mark of a session, per memory id, in order."""
    # Uses index: injection_session_memory_idx.
    marks: dict[int, list[Mark]] = {}
    rows = (
        InjectionEvent.objects.filter(session=session)
        .order_by("at", "id")
        .values_list("memory_id", "kind", "at")
    )
    for memory_id, kind, at in rows:
        marks.setdefault(int(memory_id), []).append(Mark(kind=kind, at=at))
    return marks


# --- the memories list -------------------------------------------------------------------

SORTS = ("newest", "oldest", "updated", "accessed", "retention")


def memory_browse(
    *, workspace: Workspace, filters: MemoryFilters, sort: str, now: datetime
) -> QuerySet[Memory]:
    """The workspace's memories under `filters`, in one of `SORTS` (default newest)."""
    qs = memory_list(workspace=workspace, filters=filters).defer(*_LEAN)
    if sort == "oldest":
        return qs.order_by("created_at", "id")
    if sort == "updated":
        return qs.order_by("-updated_at", "-id")
    if sort == "accessed":
        return qs.order_by("-access_count", "-last_accessed", "-id")
    if sort == "retention":
        # The decay formula in SQL, so the order holds across pages (an ORM
        # query names the row by its table).
        tau = float(knob(workspace, "decay_tau_days"))
        expression = RawSQL(
            retention_sql(alias=Memory._meta.db_table), (now, tau), output_field=FloatField()
        )
        return qs.annotate(retention_now=expression).order_by("retention_now", "id")
    return qs  # newest first, as memory_list orders it


def hits_sorted(hits: list[Hit], sort: str) -> list[Hit]:
    """Recall's hits (ranked by fused score) in another of `SORTS`; "" keeps relevance."""
    keys: dict[str, Callable[[Hit], Any]] = {
        "newest": lambda h: (-h.memory.created_at.timestamp(), -h.memory.pk),
        "oldest": lambda h: (h.memory.created_at.timestamp(), h.memory.pk),
        "updated": lambda h: (-h.memory.updated_at.timestamp(), -h.memory.pk),
        "accessed": lambda h: (-h.memory.access_count, -h.memory.last_accessed.timestamp()),
        "retention": lambda h: (h.retention, h.memory.pk),
    }
    key = keys.get(sort)
    return sorted(hits, key=key) if key else hits


def state_key_names(*, workspace: Workspace, limit: int = 200) -> list[str]:
    """Current state keys, for the list's state-key suggestions."""
    # Uses index: memory_state_history_idx.
    return list(
        Memory.objects.filter(workspace=workspace, valid_to__isnull=True)
        .exclude(state_key="")
        .order_by("state_key")
        .values_list("state_key", flat=True)[:limit]
    )


# --- one memory's access history ---------------------------------------------------------


def memory_access_history(*, workspace: Workspace, memory: Memory) -> QuerySet[InjectionEvent]:
    """Every ledger event of this memory id, newest first, with its session."""
    # Uses index: injection_workspace_idx, filtered by memory_id (no index on
    # memory_id alone; see the report on issue #9).
    return (
        InjectionEvent.objects.filter(workspace=workspace, memory_id=memory.pk)
        .select_related("session")
        .order_by("-at", "-id")
    )


@dataclass(frozen=True)
class AccessSummary:
    by_kind: dict[str, int]
    sessions: int
    used_sessions: int  # sessions where it was injected and then used
    first_at: datetime | None
    last_at: datetime | None


def memory_access_summary(*, workspace: Workspace, memory: Memory) -> AccessSummary:
    events = InjectionEvent.objects.filter(workspace=workspace, memory_id=memory.pk).order_by()
    by_kind = {row["kind"]: row["n"] for row in events.values("kind").annotate(n=Count("id"))}
    span = events.aggregate(
        first=Min("at"), last=Max("at"), sessions=Count("session_id", distinct=True)
    )
    used = (
        events.exclude(kind=InjectionEvent.Kind.INJECTED)
        .filter(
            session_id__in=events.filter(kind=InjectionEvent.Kind.INJECTED).values("session_id")
        )
        .values("session_id")
        .distinct()
        .count()
    )
    return AccessSummary(
        by_kind={k: by_kind.get(k, 0) for k in InjectionEvent.Kind.values},
        sessions=span["sessions"] or 0,
        used_sessions=used,
        first_at=span["first"],
        last_at=span["last"],
    )
