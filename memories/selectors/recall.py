"""Hybrid recall: both arms, fused, weighted by retention."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from django.utils import timezone

from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memflow_site.runtime.db import bound_rows
from memories import embeddings, lexical
from memories.decay import retention
from memories.models import Memory
from memories.selectors.answered import answers_carried
from memories.selectors.bm25 import (
    LEXICAL_CANDIDATES,
    LexicalFeatures,
    LexicalResult,
    LexicalStats,
    _lexical_hits,
    lexical_statement,
    lexical_stats,
)
from memories.selectors.currency import (
    Currency,
    currency_of,
    currency_ranked,
    current_first,
)
from memories.selectors.dense import DENSE_CANDIDATES, DenseHit, dense_hits
from memories.selectors.embedder import embedder_for
from memories.selectors.entries import MemoryFilters
from memories.selectors.fusion import DENSE_BLIND_SHARE, Fusion, Scored, fuse
from memories.selectors.projects import project_preferred
from memories.selectors.prompts import PromptRanking, is_captured_prompt, prompts_ranked
from memories.selectors.search import Seen, _vector_param, beside

logger = logging.getLogger(__name__)


@dataclass
class Hit:
    memory: Memory
    score: float
    retention: float
    cosine: float
    bm25: float


@dataclass
class RecallResult:
    hits: list[Hit]
    fusion: Fusion
    # Which of the candidates are stale, and which replace them (selectors.currency).
    currency: Currency = field(default_factory=Currency)


def _merge_lexical(
    lexical_result: LexicalResult, dense: Sequence[DenseHit], limit: int
) -> LexicalResult:
    """The lexical arm's top `limit` over its own candidates and the dense hits.

    The same ranking as one BM25 statement over both sets: the top of a
    union is the top of the union of each set's top.
    """
    merged = {h.id: h for h in lexical_result.hits}
    for hit in dense:
        if hit.lexical is not None:
            merged.setdefault(hit.id, hit.lexical)
    hits = sorted(merged.values(), key=lambda h: (-h.bm25, -h.id))[:limit]
    return LexicalResult(hits=hits, total_idf=lexical_result.total_idf)


def memory_recall(
    *,
    workspace: Workspace,
    query: str,
    k: int = 10,
    filters: MemoryFilters | None = None,
    vector: np.ndarray | Callable[[], np.ndarray | None] | None = None,
    vector_model: str | None = None,
    arms: str = "hybrid",
    now: datetime | None = None,
    prompts: PromptRanking | None = None,
    candidates: int | None = None,
    project: str | None = None,
) -> RecallResult:
    """Hybrid recall, weighted by retention. Reads only: rehearsal is the caller's.

    `vector`, when given, is the query's embedding by `vector_model` (by
    default, the workspace's serving embedder, as a query), or a function
    that waits for it: called once the term statistics are read, so that an
    embedding still under way (a hook's) overlaps that statement. Without
    it the query is embedded here. `arms` is "hybrid", "dense" or "lexical"
    (the single arms serve the quality bench and debugging). `prompts`: how
    captured prompts rank (selectors.prompts and selectors.answered).
    `candidates`: how many entries each arm brings (by default 50).
    `project`: the asking session's project, preferred (selectors.projects).

    Three statements: the term statistics, the dense arm (with the lexical
    features of its hits) and the lexical arm (with the cosines of its
    hits), each hit with the columns of its row; a fourth finds what earlier
    prompts among them led to.
    """
    filters = filters or MemoryFilters()
    now = now or timezone.now()
    policy = prompts or PromptRanking()
    parsed = lexical.parse_query(query)
    # One read of the term statistics serves both arms (the document count
    # decides exact vs HNSW, and BM25 needs it too).
    stats = lexical_stats(workspace=workspace, terms=parsed.terms)
    features = LexicalFeatures.of(parsed, stats, query)
    vector, arms = _awaited(vector, arms)
    if arms in ("hybrid", "dense") and (vector is None or vector_model is None):
        vector, vector_model, arms = _query_vector(workspace, query, vector, vector_model, arms)
    dense, lexical_result = _run_arms(
        workspace=workspace,
        parsed=parsed,
        stats=stats,
        features=features,
        filters=filters,
        query_vector=_vector_param(vector) if vector is not None else None,
        vector_model=vector_model,
        arms=arms,
        limit=candidates,
    )
    seen: dict[int, Seen] = {h.id: h.seen for h in lexical_result.hits if h.seen is not None}
    seen.update((h.id, h.seen) for h in dense)
    if arms == "dense":
        fusion = _dense_only(dense)
    elif arms == "lexical":
        fusion = _lexical_only(lexical_result)
    else:
        fusion = _fused(
            parsed,
            dense,
            lexical_result,
            vector_model,
            candidates or LEXICAL_CANDIDATES,
            _unweighing(seen, query, policy),
        )
        answers_carried(workspace=workspace, fusion=fusion, seen=seen, policy=policy, query=query)
    return _ranked(workspace, fusion, seen, k, now, arms, query, policy, project)


def _ranked(
    workspace: Workspace,
    fusion: Fusion,
    seen: dict[int, Seen],
    k: int,
    now: datetime,
    arms: str,
    query: str,
    policy: PromptRanking,
    project: str | None,
) -> RecallResult:
    """The fused candidates as the recall's result: what is current among them found,
    then weighed (see _weighed)."""
    currency = _currency(workspace, fusion, seen, k, arms)
    hits = _weighed(
        workspace=workspace,
        fusion=fusion,
        seen=seen,
        k=k,
        now=now,
        arms=arms,
        query=query,
        prompts=policy,
        currency=currency,
        project=project,
    )
    return RecallResult(hits=hits, fusion=fusion, currency=currency)


def _currency(
    workspace: Workspace, fusion: Fusion, seen: dict[int, Seen], k: int, arms: str
) -> Currency:
    """What is current among the candidates the ranking will weigh (hybrid recall only:
    the single arms serve the quality bench, which measures the arms as they are)."""
    if arms != "hybrid":
        return Currency()
    considered = _considered(fusion.candidates, seen, _wanted(k))
    return currency_of(workspace=workspace, ids=[s.id for s in considered])


def _wanted(k: int) -> int:
    """How many entries (captured prompts aside) the ranking weighs for a top `k`."""
    return max(k * 3, k)


def _awaited(
    vector: np.ndarray | Callable[[], np.ndarray | None] | None, arms: str
) -> tuple[np.ndarray | None, str]:
    """The vector a function gives (a hook's, begun early), and the arms left: none from
    it (not there within the hook's wait, hook_degraded) leaves the words alone."""
    if not callable(vector):
        return vector, arms
    found = vector()
    return (found, arms) if found is not None else (None, "lexical")


def _unweighing(seen: dict[int, Seen], query: str, policy: PromptRanking) -> set[int]:
    """The captured prompts among the hits, which do not decide how far the query's
    words are trusted (an earlier question holds them verbatim, yet rarely answers);
    none when the prompts are what the query seeks (selectors.prompts)."""
    if not policy.behind_answers(query):
        return set()
    return {i for i, s in seen.items() if is_captured_prompt(s.row)}


def _query_vector(
    workspace: Workspace,
    query: str,
    vector: np.ndarray | None,
    vector_model: str | None,
    arms: str,
) -> tuple[np.ndarray | None, str | None, str]:
    """The query's vector and its model by the serving embedder, and the arms left to run."""
    try:
        embedder = embedder_for(workspace)
    except embeddings.EmbedderUnavailable:
        # The workspace's embedder is not installed here: its entries
        # stay findable by their words rather than not at all.
        logger.warning("recall in %s falls back to the lexical arm", workspace.slug)
        return vector, vector_model, "lexical"
    if vector is None:
        vector = embedder.encode_query(query)
    return vector, embedder.model_id, arms


def _run_arms(
    *,
    workspace: Workspace,
    parsed: lexical.Query,
    stats: LexicalStats,
    features: LexicalFeatures,
    filters: MemoryFilters,
    query_vector: str | None,
    vector_model: str | None,
    arms: str,
    limit: int | None,
) -> tuple[list[DenseHit], LexicalResult]:
    """The arms `arms` names, side by side on two connections when both run."""
    statement = None
    if arms in ("hybrid", "lexical") and not parsed.is_empty:
        statement = lexical_statement(
            workspace=workspace,
            features=features,
            filters=filters,
            limit=limit or LEXICAL_CANDIDATES,
            vector=query_vector if arms == "hybrid" else None,
            model_id=vector_model or "",
        )
    dense: list[DenseHit] = []
    rows: list[tuple[Any, ...]] = []
    if arms in ("hybrid", "dense"):
        assert query_vector is not None and vector_model is not None
        nearest = partial(
            dense_hits,
            workspace=workspace,
            vector=query_vector,
            filters=filters,
            limit=limit or DENSE_CANDIDATES,
            size=stats.docs,
            model_id=vector_model,
            swapping=stats.swapping,
            features=features if arms == "hybrid" else None,
        )
        if statement is None:
            dense = nearest()
        else:
            dense, rows = beside(nearest, *statement)
    elif statement is not None:
        rows = bound_rows(*statement)
    return dense, LexicalResult(hits=_lexical_hits(rows), total_idf=features.total_idf)


def _dense_only(dense: list[DenseHit]) -> Fusion:
    fusion = Fusion(lexical_weight=0.0, reason="dense arm only")
    fusion.candidates = [
        Scored(
            id=h.id,
            score=h.cosine,
            cosine=h.cosine,
            bm25=0.0,
            coverage=0.0,
            exact_case=False,
            dense_rank=r,
        )
        for r, h in enumerate(dense)
    ]
    return fusion


def _lexical_only(lexical_result: LexicalResult) -> Fusion:
    fusion = Fusion(lexical_weight=1.0, reason="lexical arm only")
    fusion.candidates = [
        Scored(
            id=h.id,
            score=h.bm25,
            cosine=0.0,
            bm25=h.bm25,
            coverage=lexical_result.coverage(h),
            exact_case=h.exact_case,
            lexical_rank=r,
        )
        for r, h in enumerate(lexical_result.hits)
    ]
    return fusion


def _fused(
    parsed: lexical.Query,
    dense: list[DenseHit],
    lexical_result: LexicalResult,
    vector_model: str | None,
    limit: int,
    unweighing: set[int],
) -> Fusion:
    """Both arms fused, each candidate with its cosine from whichever arm read it."""
    lexical_result = _merge_lexical(lexical_result, dense, limit)
    cosines = {h.id: h.cosine for h in dense}
    for hit in lexical_result.hits:
        if hit.cosine is not None:
            cosines.setdefault(hit.id, hit.cosine)
    blind = (
        parsed.cjk_share >= DENSE_BLIND_SHARE
        and vector_model is not None
        and not embeddings.covers_cjk(vector_model)
    )
    return fuse(
        query=parsed,
        dense=[(h.id, h.cosine) for h in dense],
        lexical_result=lexical_result,
        cosines=cosines,
        dense_blind=blind,
        unweighing=unweighing,
    )


def _weighed(
    *,
    workspace: Workspace,
    fusion: Fusion,
    seen: dict[int, Seen],
    k: int,
    now: datetime,
    arms: str,
    query: str,
    prompts: PromptRanking,
    currency: Currency,
    project: str | None = None,
) -> list[Hit]:
    """The top `k` candidates once weighted by retention, stale entries below what
    replaced them (selectors.currency), earlier prompts in their place
    (selectors.prompts), as hits with their entries."""
    tau = float(knob(workspace, "decay_tau_days"))
    weighed = []
    for s in _considered(fusion.candidates, seen, _wanted(k)):
        entry = seen[s.id]
        r = retention(
            last_accessed=entry.last_accessed,
            access_count=entry.access_count,
            source=entry.source,
            now=now,
            base_tau_days=tau,
        )
        # Retention weighs, it does not dominate: a faded but exact answer
        # still beats a fresh irrelevant one.
        weighted = s.score * (0.8 + 0.2 * r) if arms == "hybrid" else s.score
        weighed.append((weighted, seen[s.id].row, (r, s)))
    weighed.sort(key=lambda w: (-w[0], -w[2][1].id))
    weighed = project_preferred(weighed, project)
    weighed = currency_ranked(weighed, {n: w[2][1].id for n, w in enumerate(weighed)}, currency)
    top = prompts_ranked(ranked=weighed, query=query, policy=prompts, k=k)
    top = current_first(top, [s.id for _, (_, s) in top], currency)
    loaded = {s.id: seen[s.id].memory() for _, (_, s) in top}
    return [
        Hit(memory=loaded[s.id], score=weighted, retention=r, cosine=s.cosine, bm25=s.bm25)
        for weighted, (r, s) in top
        if s.id in loaded
    ]


def _considered(candidates: list[Scored], seen: dict[int, Seen], wanted: int) -> list[Scored]:
    """The first candidates holding `wanted` entries that are not captured prompts.

    Earlier prompts that the ranking will demote or leave out must not take
    the places of the entries that answer.
    """
    others = 0
    for n, s in enumerate(candidates):
        if not is_captured_prompt(seen[s.id].row):
            others += 1
            if others == wanted:
                return candidates[: n + 1]
    return candidates
