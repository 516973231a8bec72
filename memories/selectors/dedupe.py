"""The probes dedupe asks: repeats by hash, neighbours by vector."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connection

from contexts.models import Workspace
from memflow_site.runtime.db import bound_rows
from memories.models import Memory
from memories.selectors.search import (
    EXACT_PROBE_BUDGET,
    EXACT_SCAN_BELOW,
    _vector_literal,
    workspace_size,
)


def memories_by_norm_hash(
    *, workspace: Workspace, hashes: Sequence[str]
) -> dict[str, list[Memory]]:
    found: dict[str, list[Memory]] = {}
    if not hashes:
        return found
    # Uses index: memory_current_norm_idx. The ids first (raw SQL, see
    # memflow_site.runtime.db): most texts repeat nothing, and then no row is read at all.
    ids = [
        row[0]
        for row in bound_rows(
            """SELECT id FROM memories_memory
               WHERE workspace_id = %(ws)s AND valid_to IS NULL AND state_key = ''
                 AND norm_hash = ANY(%(hashes)s::text[])""",
            {"ws": workspace.pk, "hashes": sorted(set(hashes))},
        )
    ]
    for memory in Memory.objects.filter(pk__in=ids) if ids else ():
        found.setdefault(memory.norm_hash, []).append(memory)
    return found


def dedupe_neighbours(
    *, workspace: Workspace, vectors: Sequence[np.ndarray], model_id: str, limit: int = 5
) -> list[list[tuple[Memory, float]]]:
    """For each vector (from `model_id`), the nearest current plain entries of that model."""
    if not vectors:
        return []
    params: dict[str, Any] = {
        "ws": workspace.pk,
        "vs": [_vector_literal(v) for v in vectors],
        "n": limit,
        "model": model_id,
    }
    size = workspace_size(workspace=workspace)
    if size < EXACT_SCAN_BELOW and size * len(vectors) <= EXACT_PROBE_BUDGET:
        # Exact: read the workspace's candidate rows once (through its index)
        # and compare every probe against that set.
        source = """(
            SELECT id, embedding FROM memories_memory
            WHERE workspace_id = %(ws)s AND valid_to IS NULL AND state_key = '' AND embedding IS NOT NULL
              AND embedding_model = %(model)s
        )"""
        sql = f"""
            WITH candidates AS MATERIALIZED {source},
                 probes AS MATERIALIZED (
                     SELECT ord, v::vector AS v FROM unnest(%(vs)s::text[]) WITH ORDINALITY AS p(v, ord)
                 )
            SELECT q.ord, n.id, n.cos
            FROM probes q
            CROSS JOIN LATERAL (
                SELECT c.id, 1 - (c.embedding <=> q.v) AS cos
                FROM candidates c ORDER BY c.embedding <=> q.v LIMIT %(n)s
            ) n
        """
    else:
        # Raw SQL: a batch of HNSW probes as one lateral join.
        sql = """
            WITH probes AS MATERIALIZED (
                SELECT ord, v::vector AS v FROM unnest(%(vs)s::text[]) WITH ORDINALITY AS p(v, ord)
            )
            SELECT q.ord, n.id, n.cos
            FROM probes q
            CROSS JOIN LATERAL (
                SELECT m.id, 1 - (m.embedding <=> q.v) AS cos
                FROM memories_memory m
                WHERE m.workspace_id = %(ws)s AND m.valid_to IS NULL AND m.state_key = ''
                  AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s
                ORDER BY m.embedding <=> q.v
                LIMIT %(n)s
            ) n
        """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    memories = Memory.objects.defer("embedding_next").in_bulk({int(r[1]) for r in rows})
    result: list[list[tuple[Memory, float]]] = [[] for _ in vectors]
    for ord_, memory_id, cosine in rows:
        memory = memories.get(int(memory_id))
        if memory is not None:
            result[int(ord_) - 1].append((memory, float(cosine)))
    return result


def dedupe_neighbours_known(
    *,
    workspace: Workspace,
    nearest: Sequence[tuple[int, float]],
    model_id: str,
    limit: int = 5,
    min_cosine: float = -1.0,
) -> list[tuple[Memory, float]]:
    """`dedupe_neighbours` for one vector whose nearest entries a search already found.

    `nearest`: (id, cosine) best first, from a dense search with that vector
    over current entries (a recall's dense arm). Kept: the first `limit` that
    are current plain entries of `model_id` in the workspace, at `min_cosine`
    or closer (the dedupe passes its merge gate: no farther entry can fold,
    and most prompts then read no rows at all).
    """
    ids = [i for i, cosine in nearest if cosine >= min_cosine]
    if not ids:
        return []
    rows = Memory.objects.defer("embedding_next").in_bulk(ids)
    found = []
    for memory_id, cosine in nearest:
        memory = rows.get(memory_id)
        if (
            memory is not None
            and memory.workspace_id == workspace.pk
            and memory.valid_to is None
            and not memory.state_key
            and memory.embedding_model == model_id
        ):
            found.append((memory, cosine))
    return found[:limit]
