"""Adaptive fusion of recall's two arms."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from memories import lexical
from memories.selectors.bm25 import LexicalResult


@dataclass
class Scored:
    id: int
    score: float
    cosine: float
    bm25: float
    coverage: float
    exact_case: bool
    dense_rank: int | None = None
    lexical_rank: int | None = None
    # The earlier prompt whose answer this is, when that raised it (selectors.answered).
    answered: int | None = None


@dataclass
class Fusion:
    """How much the lexical arm is trusted for this query, and why."""

    lexical_weight: float
    reason: str
    candidates: list[Scored] = field(default_factory=list)


RRF_K = 60
# The lexical weight when the dense model cannot read the query's script.
DENSE_BLIND_WEIGHT = 0.9
# A query is in such a script when this share of its characters is.
DENSE_BLIND_SHARE = 0.5
# Added (times the lexical weight) for an entry holding the query verbatim.
PHRASE_BONUS = 0.25
# The share of each candidate's score given by its ranks in the two arms
# (reciprocal-rank fusion, 1.0 for the first of both). The weight guesses
# which arm to trust from the query alone and guesses wrong when the trusted
# arm is weak on the text (a dense model on commit messages): the ranks keep
# the other arm's first hits from being buried by the trusted one's scores.
RANK_SHARE = 0.15


def fuse(
    *,
    query: lexical.Query,
    dense: list[tuple[int, float]],
    lexical_result: LexicalResult,
    cosines: dict[int, float],
    dense_blind: bool = False,
    unweighing: Collection[int] = (),
) -> Fusion:
    """Adaptive convex fusion of the two arms.

    Plain reciprocal-rank fusion throws away how *well* each arm matched: an
    entry that holds every word of a verbatim fragment ranks no higher than
    one that shares a common word. Here each candidate gets both scores —
    cosine from the dense arm, BM25 (normalised by the best) from the lexical
    arm — and the weight of the lexical side depends on the query:

    - if the best lexical match holds nearly all of the query's idf mass, the
      query's own words occur together in an entry (a fragment, an exact
      identifier): the lexical arm is trusted;
    - if it holds little, the query is worded differently from what it seeks
      (a question, a paraphrase): the dense arm is trusted;
    - between the two, the weight slides linearly.

    An entry containing a query identifier in its exact case gets a bonus, so
    `MemUsage` ranks above `memusage`; one holding the query's words in order
    (a quoted passage) gets one too. A share of the score (RANK_SHARE) is
    plain reciprocal-rank fusion, so the first hits of either arm stay near
    the top whatever the weight.

    `dense_blind`: the query is mostly in a script the embedding model cannot
    read (Chinese for all-MiniLM-L6-v2, whose vocabulary turns most of it
    into unknown tokens): the lexical arm is trusted whatever its coverage.
    """
    ids = list(dict.fromkeys([i for i, _ in dense] + [h.id for h in lexical_result.hits]))
    if not ids:
        return Fusion(lexical_weight=0.0, reason="no candidates")
    weight, reason = _lexical_weight(query, lexical_result, dense_blind, unweighing)
    scored = _scored(
        ids=ids,
        query=query,
        dense=dense,
        lexical_result=lexical_result,
        cosines=cosines,
        weight=weight,
    )
    scored.sort(key=lambda s: (-s.score, -s.id))
    return Fusion(lexical_weight=weight, reason=reason, candidates=scored)


def _lexical_weight(
    query: lexical.Query,
    lexical_result: LexicalResult,
    dense_blind: bool,
    unweighing: Collection[int] = (),
) -> tuple[float, str]:
    """How much the lexical arm is trusted for this query (see fuse), and why.

    `unweighing`: hits whose coverage does not count (captured prompts: an
    earlier question holds the next one's words verbatim, yet rarely answers it).
    """
    best_bm25 = max((h.bm25 for h in lexical_result.hits), default=0.0)
    if best_bm25 <= 0:
        return 0.0, "no lexical match"
    best_coverage = max(
        (lexical_result.coverage(h) for h in lexical_result.hits if h.id not in unweighing),
        default=0.0,
    )
    slide = min(max((best_coverage - 0.5) / 0.4, 0.0), 1.0)
    weight = 0.1 + 0.8 * slide
    reason = f"best lexical coverage {best_coverage:.2f}"
    if query.identifier_share >= 0.5 and any(h.exact_case for h in lexical_result.hits):
        weight = max(weight, 0.7)
        reason += ", identifier query"
    if dense_blind:
        weight = max(weight, DENSE_BLIND_WEIGHT)
        reason += ", a script the embedding model cannot read"
    return weight, reason


def _scored(
    *,
    ids: list[int],
    query: lexical.Query,
    dense: list[tuple[int, float]],
    lexical_result: LexicalResult,
    cosines: dict[int, float],
    weight: float,
) -> list[Scored]:
    """Each candidate's convex mix of its two arms' scores, bonuses and tie-breaker."""
    lex_by_id = {hit.id: hit for hit in lexical_result.hits}
    dense_rank = {i: r for r, (i, _) in enumerate(dense)}
    lexical_rank = {h.id: r for r, h in enumerate(lexical_result.hits)}
    best_bm25 = max((h.bm25 for h in lexical_result.hits), default=0.0)
    # A query that is all identifier gets its exact-case matches ranked above
    # every case-folded one; an identifier inside prose only nudges, and only
    # as much as the lexical arm is trusted at all.
    exact_bonus = weight * (0.1 + 0.5 * query.identifier_share)
    cos_values = [cosines.get(i, 0.0) for i in ids]
    cos_hi, cos_lo = max(cos_values), min(cos_values)
    spread = max(cos_hi - cos_lo, 1e-6)
    scored = []
    for i in ids:
        hit = lex_by_id.get(i)
        cosine = cosines.get(i, 0.0)
        dense_part = (cosine - cos_lo) / spread * 0.5 + max(cosine, 0.0) * 0.5
        lexical_part = (hit.bm25 / best_bm25) if hit and best_bm25 > 0 else 0.0
        score = weight * lexical_part + (1 - weight) * dense_part
        if hit and hit.exact_case:
            score += exact_bonus
        if hit and hit.phrase:
            score += weight * PHRASE_BONUS
        ranks = 1 / (RRF_K + 1 + dense_rank.get(i, 1000)) + 1 / (
            RRF_K + 1 + lexical_rank.get(i, 1000)
        )
        score = (1 - RANK_SHARE) * score + RANK_SHARE * ranks * (RRF_K + 1) / 2
        scored.append(
            Scored(
                id=i,
                score=score,
                cosine=cosine,
                bm25=hit.bm25 if hit else 0.0,
                coverage=lexical_result.coverage(hit) if hit else 0.0,
                exact_case=bool(hit and hit.exact_case),
                dense_rank=dense_rank.get(i),
                lexical_rank=lexical_rank.get(i),
            )
        )
    return scored
