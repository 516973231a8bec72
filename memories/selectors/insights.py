"""Insights: conflicting entries, fading ones, cleanup candidates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from contexts.fairness import heavy_read
from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memories.conf import conflict_cosine
from memories.decay import cleanup_threshold_sql, retention_sql
from memories.models import Memory, MemoryEvidence, TriageDecision
from memories.selectors.embedder import embedder_for
from memories.selectors.entries import visible_sql
from memories.selectors.search import _distance_order


@dataclass
class Conflict:
    a: Memory
    b: Memory
    cosine: float


def memory_conflicts(
    *,
    workspace: Workspace,
    threshold: float | None = None,
    scan: int = 500,
    limit: int = 50,
    viewer_id: int | None = None,
) -> list[Conflict]:
    """Current entries that mean nearly the same but say it differently.

    Scans the `scan` most recent current entries, each against its nearest
    neighbours through the HNSW index, so the cost is bounded however large
    the library grows. Only entries of the serving embedder's model are
    compared; `threshold` defaults to that model's (`conf.CONFLICT_COSINE`).
    """
    model_id = embedder_for(workspace).model_id
    if threshold is None:
        threshold = conflict_cosine(model_id)
    params: dict[str, Any] = {
        "ws": workspace.pk,
        "scan": scan,
        "t": threshold,
        "limit": limit,
        "model": model_id,
    }
    # Private entries of others neither appear nor pair: a pair would show their text.
    visible = visible_sql(viewer_id, params, "m")
    visible_recent = visible_sql(viewer_id, params, "r0")
    order = _distance_order(workspace, "r.embedding")
    # Raw SQL: a lateral nearest-neighbour probe per recent entry.
    sql = f"""
        WITH recent AS (
            SELECT r0.id, r0.embedding, r0.norm_hash FROM memories_memory r0
            WHERE r0.workspace_id = %(ws)s AND r0.valid_to IS NULL AND r0.embedding IS NOT NULL
              AND r0.embedding_model = %(model)s AND {visible_recent}
            ORDER BY r0.created_at DESC LIMIT %(scan)s
        )
        SELECT DISTINCT LEAST(r.id, n.id), GREATEST(r.id, n.id), n.cos
        FROM recent r
        CROSS JOIN LATERAL (
            SELECT m.id, 1 - (m.embedding <=> r.embedding) AS cos, m.norm_hash
            FROM memories_memory m
            WHERE m.workspace_id = %(ws)s AND m.valid_to IS NULL AND m.id <> r.id
              AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s AND {visible}
            ORDER BY {order} LIMIT 3
        ) n
        WHERE n.cos >= %(t)s AND n.norm_hash <> r.norm_hash
          -- settled pairs are left out before the limit, so they never crowd out open ones
          AND NOT EXISTS (
              SELECT 1 FROM memories_triagedecision d
              WHERE d.workspace_id = %(ws)s AND d.kind = 'conflict'
                AND d.memory_ids = ARRAY[LEAST(r.id, n.id), GREATEST(r.id, n.id)]::bigint[]
          )
        ORDER BY n.cos DESC LIMIT %(limit)s
    """
    with heavy_read("conflicts"), connection.cursor() as cursor:
        cursor.execute(sql, params)
        pairs = _unsettled(workspace, cursor.fetchall())
    rows = Memory.objects.select_related("workspace", "session").in_bulk(
        {i for a, b, _ in pairs for i in (a, b)}
    )
    return [
        Conflict(a=rows[a], b=rows[b], cosine=float(c))
        for a, b, c in pairs
        if a in rows and b in rows
    ]


def _unsettled(
    workspace: Workspace, pairs: list[tuple[int, int, float]]
) -> list[tuple[int, int, float]]:
    """Drop the pairs already settled: a stored decision (kept both, dismissed, …),
    both evidence of one consolidation (the conclusion says what holds), or a
    conclusion and its own evidence (alike by construction)."""
    ids = {i for a, b, _ in pairs for i in (a, b)}
    decided = {
        tuple(d)
        for d in TriageDecision.objects.filter(
            workspace=workspace, kind=TriageDecision.Kind.CONFLICT, memory_ids__overlap=list(ids)
        ).values_list("memory_ids", flat=True)
    }
    conclusions: dict[int, set[int]] = {}
    for evidence, conclusion in MemoryEvidence.objects.filter(evidence_id__in=ids).values_list(
        "evidence_id", "conclusion_id"
    ):
        conclusions.setdefault(evidence, set()).add(conclusion)

    def linked(a: int, b: int) -> bool:
        of_a, of_b = conclusions.get(a, set()), conclusions.get(b, set())
        return bool(of_a & of_b) or b in of_a or a in of_b

    return [(a, b, c) for a, b, c in pairs if (a, b) not in decided and not linked(a, b)]


@dataclass
class ConflictCluster:
    """Entries linked by conflicting pairs: one decision settles them together."""

    members: list[Memory]
    pairs: list[Conflict]

    @property
    def ids(self) -> list[int]:
        return [m.pk for m in self.members]

    @property
    def top_cosine(self) -> float:
        return max(p.cosine for p in self.pairs)


def memory_conflict_clusters(
    *,
    workspace: Workspace,
    threshold: float | None = None,
    limit: int = 20,
    viewer_id: int | None = None,
) -> list[ConflictCluster]:
    """`memory_conflicts` grouped: pairs sharing an entry form one cluster
    (three near-copies are one row, not three), the closest first."""
    pairs = memory_conflicts(
        workspace=workspace, threshold=threshold, limit=limit * 10, viewer_id=viewer_id
    )
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for pair in pairs:
        parent[root(pair.a.pk)] = root(pair.b.pk)
    groups: dict[int, ConflictCluster] = {}
    for pair in pairs:
        cluster = groups.setdefault(root(pair.a.pk), ConflictCluster(members=[], pairs=[]))
        cluster.pairs.append(pair)
        for m in (pair.a, pair.b):
            if m.pk not in cluster.ids:
                cluster.members.append(m)
    clusters = sorted(groups.values(), key=lambda c: -c.top_cosine)[:limit]
    for cluster in clusters:
        cluster.members.sort(key=lambda m: m.pk)
    return clusters


def memory_fading(
    *,
    workspace: Workspace,
    below: float = 0.5,
    limit: int = 50,
    now: datetime | None = None,
    viewer_id: int | None = None,
) -> list[tuple[Memory, float]]:
    """High-value entries (the model's or imported) whose retention is falling below `below`."""
    now = now or timezone.now()
    tau = float(knob(workspace, "decay_tau_days"))
    params: dict[str, Any] = {"ws": workspace.pk, "now": now, "tau": tau, "below": below}
    visible = visible_sql(viewer_id, params)
    # Raw SQL: the retention formula evaluated by the database, so that only
    # the fading rows travel.
    sql = f"""
        SELECT m.id, {retention_sql("%(now)s", "%(tau)s")} AS r
        FROM memories_memory m
        WHERE m.workspace_id = %(ws)s AND m.valid_to IS NULL AND NOT m.pinned
          AND m.source IN ('model', 'import') AND {visible}
          AND NOT EXISTS (
              SELECT 1 FROM memories_triagedecision d
              WHERE d.workspace_id = m.workspace_id AND d.kind = 'fading'
                AND d.memory_ids = ARRAY[m.id]
          )
          AND {retention_sql("%(now)s", "%(tau)s")} < %(below)s
        ORDER BY r ASC LIMIT %(limit)s
    """
    with heavy_read("insights"), connection.cursor() as cursor:
        cursor.execute(sql, params | {"limit": limit})
        found = cursor.fetchall()
    rows = Memory.objects.select_related("workspace", "session").in_bulk([i for i, _ in found])
    return [(rows[i], float(r)) for i, r in found if i in rows]


def memory_below_retention(*, workspace: Workspace, now: datetime) -> list[tuple[int, float, str]]:
    """Cleanup candidates: (id, retention, source) under the workspace's thresholds, or expired."""
    tau = float(knob(workspace, "decay_tau_days"))
    plain = float(knob(workspace, "cleanup_threshold"))
    valuable = float(knob(workspace, "cleanup_threshold_valuable"))
    expr = retention_sql("%(now)s", "%(tau)s")
    # Raw SQL: as in memory_fading.
    sql = f"""
        SELECT m.id, {expr} AS r, m.source FROM memories_memory m
        WHERE m.workspace_id = %(ws)s AND NOT m.pinned AND m.forgotten_at IS NULL
          AND ({expr} < {cleanup_threshold_sql("%(plain)s", "%(valuable)s")}
               OR m.expires_at < %(now)s)
        ORDER BY m.id
    """
    with connection.cursor() as cursor:
        cursor.execute(
            sql, {"ws": workspace.pk, "now": now, "tau": tau, "plain": plain, "valuable": valuable}
        )
        return [(int(i), float(r), str(s)) for i, r, s in cursor.fetchall()]
