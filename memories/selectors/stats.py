"""Library statistics and the injection ledger's summary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db import connection
from django.db.models import Avg, Count, Max, Min, Q, QuerySet
from django.utils import timezone

from contexts.fairness import heavy_read
from contexts.models import Workspace
from memories.models import InjectionEvent, Memory
from memories.selectors.entries import hidden_from, visible_to


def memory_counts_by_workspace() -> dict[int, int]:
    """How many memories each workspace holds, every row counted (for the admin's list)."""
    rows = Memory.objects.order_by().values("workspace").annotate(n=Count("pk"))
    return {int(row["workspace"]): int(row["n"]) for row in rows}


def memory_stats(
    *, workspace: Workspace, viewer_id: int | None, now: datetime | None = None
) -> dict[str, Any]:
    """The library's counts as `viewer_id` sees it: another member's private entries
    are not counted (their existence is theirs to tell)."""
    now = now or timezone.now()
    with heavy_read("stats"):
        return _memory_stats(workspace=workspace, viewer_id=viewer_id, now=now)


def _memory_stats(*, workspace: Workspace, viewer_id: int | None, now: datetime) -> dict[str, Any]:
    all_rows = Memory.objects.filter(
        visible_to(viewer_id), workspace=workspace, forgotten_at__isnull=True
    )
    current = all_rows.filter(valid_to__isnull=True)

    def counts(column: str) -> dict[str, int]:
        return {
            (row[column] or ""): row["n"]
            for row in current.values(column).annotate(n=Count("id")).order_by(column)
        }

    aggregate = current.aggregate(
        total=Count("id"),
        accessed=Count("id", filter=Q(access_count__gt=0)),
        access_mean=Avg("access_count"),
        access_max=Max("access_count"),
        oldest=Min("created_at"),
        newest=Max("created_at"),
    )
    oldest, newest = aggregate["oldest"], aggregate["newest"]
    return {
        "current": aggregate["total"],
        "superseded": all_rows.filter(valid_to__isnull=False).count(),
        "by_source": counts("source"),
        "by_app": counts("app"),
        "by_compartment": counts("compartment"),
        "state_keys": current.exclude(state_key="").count(),
        "never_accessed": aggregate["total"] - aggregate["accessed"],
        "access_count_mean": float(aggregate["access_mean"] or 0.0),
        "access_count_max": aggregate["access_max"] or 0,
        "oldest_age_days": round((now - oldest).total_seconds() / 86400, 2) if oldest else None,
        "newest_age_days": round((now - newest).total_seconds() / 86400, 2) if newest else None,
    }


# --- the ledger ------------------------------------------------------------------


@dataclass(frozen=True)
class MostUsed:
    memory_id: int
    events: int  # every ledger mark, injections included
    uses: int  # the marks that were uses: expanded, recalled, superseded, cited


HottestRank = Literal["uses", "events"]


def ledger_hottest(
    *,
    workspace: Workspace,
    viewer_id: int | None,
    limit: int = 20,
    session_id: str | None = None,
    rank: HottestRank = "uses",
) -> list[MostUsed]:
    """The hottest ids. By `uses` (the dashboard, the API and `memflow ledger`): the ids the
    model used most, then by all marks, only ids with a use; by all marks, ids injected
    often and never used would lead, and those are the ledger page's "never used". By
    `events`: every mark counts, injections included."""
    return _hottest(_ledger_events(workspace, session_id, viewer_id), limit=limit, rank=rank)


def _ledger_events(
    workspace: Workspace, session_id: str | None, viewer_id: int | None
) -> QuerySet[InjectionEvent]:
    """The ledger's marks, less those of entries private to someone other than `viewer_id`."""
    events = InjectionEvent.objects.filter(workspace=workspace).exclude(
        memory_id__in=hidden_from(workspace=workspace, viewer_id=viewer_id)
    )
    if session_id is not None:
        events = events.filter(session__external_id=session_id)
    return events


def _pair_counts(events: QuerySet[InjectionEvent]) -> dict[str, int]:
    """Of the (session, memory) pairs injected, how many were then used, in all and
    by each kind of use: counted in the database in one statement, whatever the
    ledger's size (it was every pair loaded into Python, five queries a page).

    Raw SQL over the ORM's own query of the marks: COUNT ... FILTER over a
    grouped subquery, which the ORM cannot say (an aggregate over aggregates).
    """
    marks, params = (
        events.order_by().values("session_id", "memory_id", "kind").query.sql_with_params()
    )
    flags = ", ".join(f"bool_or(kind = %s) AS {kind}" for kind in ("injected", *_USE_KINDS))
    any_use = " OR ".join(_USE_KINDS)
    counts = ", ".join(f"COUNT(*) FILTER (WHERE injected AND {kind})" for kind in _USE_KINDS)
    sql = (
        f"SELECT COUNT(*) FILTER (WHERE injected), "
        f"COUNT(*) FILTER (WHERE injected AND ({any_use})), {counts} "
        f"FROM (SELECT {flags} FROM ({marks}) AS marks GROUP BY session_id, memory_id) AS pairs"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*("injected", *_USE_KINDS), *params])
        row = cursor.fetchone()
    return dict(zip(("injected", "used", *_USE_KINDS), (int(v) for v in row), strict=True))


def _hottest(events: QuerySet[InjectionEvent], *, limit: int, rank: HottestRank) -> list[MostUsed]:
    # Uses index: injection_workspace_idx.
    rows = events.values("memory_id").annotate(
        n=Count("id"), used=Count("id", filter=~Q(kind=InjectionEvent.Kind.INJECTED))
    )
    if rank == "uses":
        rows = rows.filter(used__gt=0).order_by("-used", "-n", "memory_id")
    else:
        rows = rows.order_by("-n", "memory_id")
    return [
        MostUsed(memory_id=int(r["memory_id"]), events=r["n"], uses=r["used"]) for r in rows[:limit]
    ]


def ledger_summary(
    *,
    workspace: Workspace,
    viewer_id: int | None,
    session_id: str | None = None,
    top: int = 10,
    rank: HottestRank = "uses",
) -> dict[str, Any]:
    """Injection → use rates: of the ids injected into a session, how many were then used;
    and the `top` hottest ids, ranked as `ledger_hottest` ranks them."""
    with heavy_read("ledger"):
        return _ledger_summary(
            workspace=workspace, session_id=session_id, viewer_id=viewer_id, top=top, rank=rank
        )


# The kinds of mark that say an injected entry was used, by their values
# (plain strings: they name the aggregate columns too).
_USE_KINDS: tuple[str, ...] = tuple(
    kind.value
    for kind in (
        InjectionEvent.Kind.EXPANDED,
        InjectionEvent.Kind.RECALLED,
        InjectionEvent.Kind.SUPERSEDED,
        InjectionEvent.Kind.CITED,
    )
)


def _ledger_summary(
    *,
    workspace: Workspace,
    session_id: str | None,
    viewer_id: int | None,
    top: int,
    rank: HottestRank,
) -> dict[str, Any]:
    events = _ledger_events(workspace, session_id, viewer_id)
    counts = _pair_counts(events)
    n = counts["injected"]
    uses = {kind: counts[kind] for kind in _USE_KINDS}
    return {
        "injected": n,
        "used": counts["used"],
        "use_rate": round(counts["used"] / n, 4) if n else 0.0,
        "by_kind": uses,
        "rates": {kind: (round(used / n, 4) if n else 0.0) for kind, used in uses.items()},
        "hottest": [
            {"memory_id": h.memory_id, "events": h.events, "uses": h.uses}
            for h in _hottest(events, limit=top, rank=rank)
        ],
    }
