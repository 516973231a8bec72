"""Why a hook block holds the memories it does, from what its recall already computed.

Built on the hook's hot path: no query, only what the recall returned (its
hits and the fusion's candidates) and a tokenisation of each injected text.
"""

from __future__ import annotations

from collections.abc import Sequence

from contexts.hooks import MemoryWhy, Ranking
from memories import lexical
from memories.models import Memory
from memories.selectors import RecallResult

MAX_TERMS = 12  # matched terms kept per memory
TERM_CHARS = 40


def _matched_terms(query: lexical.Query, memory: Memory, bm25: float) -> tuple[str, ...]:
    """The query's terms the entry holds, in the query's order (as BM25 counted
    them), each as the query wrote it.

    An entry with no BM25 holds none of them: only those with one are tokenised.
    """
    if not query.terms or bm25 <= 0:
        return ()
    held = set(lexical.tokenize(memory.text))
    shown = (
        query.written.get(t, t) for t in query.terms if t in held and not lexical.is_exact_form(t)
    )
    return tuple(t[:TERM_CHARS] for t in shown)[:MAX_TERMS]


def recall_ranking(*, result: RecallResult, query: str, ids: Sequence[int]) -> Ranking:
    """Each of `ids` (those the block holds) with its rank, score and the arms' parts."""
    wanted = set(ids)
    candidates = {c.id: c for c in result.fusion.candidates if c.id in wanted}
    parsed = lexical.parse_query(query)
    whys = []
    for rank, hit in enumerate(result.hits, start=1):
        memory_id = int(hit.memory.pk)
        if memory_id not in wanted:
            continue
        scored = candidates.get(memory_id)
        dense_rank = scored.dense_rank if scored else None
        lexical_rank = scored.lexical_rank if scored else None
        whys.append(
            MemoryWhy(
                id=memory_id,
                rank=rank,
                score=hit.score,
                fused=scored.score if scored else None,
                cosine=hit.cosine if dense_rank is not None or hit.cosine else None,
                dense_rank=None if dense_rank is None else dense_rank + 1,
                bm25=hit.bm25 if lexical_rank is not None else None,
                lexical_rank=None if lexical_rank is None else lexical_rank + 1,
                terms=_matched_terms(parsed, hit.memory, hit.bm25),
                retention=hit.retention,
                basis=(
                    f"answered #{scored.answered}, an earlier question like this one"
                    if scored and scored.answered
                    else ""
                ),
            )
        )
    order = {i: n for n, i in enumerate(ids)}
    whys.sort(key=lambda w: order[w.id])
    return Ranking(
        memories=tuple(whys),
        lexical_weight=result.fusion.lexical_weight,
        reason=result.fusion.reason,
    )


def listed_ranking(*, lists: Sequence[tuple[str, Sequence[int]]], reason: str) -> Ranking:
    """A block chosen by rule, not by a query: each memory with the list that chose it."""
    whys = []
    rank = 0
    for basis, ids in lists:
        for memory_id in ids:
            rank += 1
            whys.append(MemoryWhy(id=int(memory_id), rank=rank, basis=basis))
    return Ranking(memories=tuple(whys), reason=reason)
