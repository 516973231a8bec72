"""The dense arm of recall: the entries nearest the query's vector."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contexts.models import Workspace
from memflow_site.runtime.db import bound_rows
from memories.selectors.bm25 import _BM25_LATERAL, LexicalFeatures, LexicalHit
from memories.selectors.embedder import embedder_for
from memories.selectors.entries import MemoryFilters
from memories.selectors.search import (
    _HIT,
    QueryVector,
    Seen,
    _distance_order,
    _vector_param,
    reembed_swapping,
)

DENSE_CANDIDATES = 50


@dataclass
class DenseHit:
    id: int
    cosine: float
    seen: Seen
    # The entry's BM25 and match features, when it holds a query term (see dense_hits).
    lexical: LexicalHit | None = None


def dense_arm(
    *,
    workspace: Workspace,
    vector: np.ndarray,
    filters: MemoryFilters,
    limit: int = DENSE_CANDIDATES,
    size: int | None = None,
    model_id: str | None = None,
    swapping: bool | None = None,
) -> list[tuple[int, float]]:
    """(id, cosine similarity), best first. `size`: the workspace's entry count, if known."""
    hits = dense_hits(
        workspace=workspace,
        vector=vector,
        filters=filters,
        limit=limit,
        size=size,
        model_id=model_id,
        swapping=swapping,
    )
    return [(h.id, h.cosine) for h in hits]


def dense_hits(
    *,
    workspace: Workspace,
    vector: QueryVector,
    filters: MemoryFilters,
    limit: int = DENSE_CANDIDATES,
    size: int | None = None,
    model_id: str | None = None,
    swapping: bool | None = None,
    features: LexicalFeatures | None = None,
) -> list[DenseHit]:
    """The entries nearest to `vector`, best first, with what fusion and retention need.

    Only entries embedded by `model_id` (the model `vector` comes from;
    default: the workspace's serving embedder) are ranked: vectors of two
    models are not comparable. While a re-embed exchanges the vector columns
    (`swapping`, read from the statistics when not given), an entry's vector
    of that model may be in either column: the workspace is scanned exactly.

    With `features`, each hit also carries its BM25 and the rest of the
    lexical arm's features for the query, read in the same statement: the
    lexical arm then need not look the dense hits up again, and the two arms
    are independent.
    """
    if model_id is None:
        model_id = embedder_for(workspace).model_id
    if swapping is None:
        swapping = reembed_swapping(workspace=workspace)
    params: dict[str, Any] = {
        "ws": workspace.pk,
        "q": _vector_param(vector),
        "n": limit,
        "model": model_id,
    }
    where = filters.sql(params)
    if swapping:
        nearest = _NEAREST_SWAPPING.format(where=where)
    else:
        # The model filter keeps the HNSW index usable: nearly every row
        # passes it, and the iterative scan goes on until enough have.
        order = _distance_order(workspace, "%(q)s::vector", filters=filters, size=size)
        nearest = _NEAREST.format(where=where, order=order)
    if features is None:
        features = LexicalFeatures.none()
    params.update(features.params)
    # Raw SQL: `ORDER BY … + 0` (exact scan), BM25 over a jsonb term map and
    # regex matches have no ORM spelling. The nearest rows come first, from
    # the HNSW index; only those few get the lexical features computed.
    sql = f"""
        WITH d AS ({nearest})
        SELECT d.id, 1 - d.dist, s.bm25, s.matched_idf,
               s.bm25 IS NOT NULL AND %(has_patterns)s AND m.text ~ ANY(%(patterns)s),
               s.bm25 IS NOT NULL AND %(has_phrase)s AND m.text ~* %(phrase)s,
               {_HIT.sql}
        FROM d JOIN memories_memory m ON m.id = d.id
        {_BM25_LATERAL}
        ORDER BY d.dist, d.id
    """
    return [_dense_hit(r) for r in bound_rows(sql, params)]


# The nearest rows of the model, through the HNSW index or exactly (`order`).
_NEAREST = """
            SELECT m.id, m.embedding <=> %(q)s::vector AS dist
            FROM memories_memory m
            WHERE m.workspace_id = %(ws)s AND m.embedding IS NOT NULL
              AND m.embedding_model = %(model)s {where}
            ORDER BY {order}
            LIMIT %(n)s
        """
# While a re-embed swaps: each row's vector of the model, from whichever column holds it.
_NEAREST_SWAPPING = """
            SELECT id, v <=> %(q)s::vector AS dist FROM (
                SELECT m.id, CASE WHEN m.embedding_model = %(model)s THEN m.embedding
                                  ELSE m.embedding_next END AS v
                FROM memories_memory m
                WHERE m.workspace_id = %(ws)s {where}
                  AND (m.embedding_model = %(model)s OR m.embedding_next_model = %(model)s)
            ) s
            ORDER BY v <=> %(q)s::vector, id
            LIMIT %(n)s
        """


def _dense_hit(r: tuple[Any, ...]) -> DenseHit:
    """A row of dense_hits' statement as a hit, with its lexical features if it holds a term."""
    hit = DenseHit(id=int(r[0]), cosine=float(r[1]), seen=Seen(r[6:]))
    if r[2] is not None:
        hit.lexical = LexicalHit(
            id=hit.id,
            bm25=float(r[2]),
            matched_idf=float(r[3]),
            exact_case=bool(r[4]),
            cosine=hit.cosine,
            phrase=bool(r[5]),
            seen=hit.seen,
        )
    return hit
