"""The lexical arm of recall: BM25 over the entries holding the query's rarer terms."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contexts.models import Workspace
from memflow_site.runtime.db import bound_rows
from memories import lexical
from memories.framing import framing_weights
from memories.selectors.entries import MemoryFilters
from memories.selectors.search import (
    _HIT,
    STAT_DOCS,
    STAT_LENGTH,
    STAT_SWAPPING,
    QueryVector,
    Seen,
    _vector_param,
)

LEXICAL_CANDIDATES = 50
# The lexical arm scores only documents containing one of the query's rarer
# terms, chosen until their document frequencies add up to this: it bounds
# the work of a query full of common words; recall does not suffer, since
# the dense arm's hits are scored as well.
LEXICAL_POSTINGS_BUDGET = 500


@dataclass
class LexicalStats:
    docs: int
    avg_length: float
    df: dict[str, int]
    swapping: bool = False  # a re-embed is exchanging vector columns (see dense_hits)


def lexical_stats(*, workspace: Workspace, terms: Sequence[str]) -> LexicalStats:
    # Raw SQL, bound on the server: the ORM's `IN` list would give the
    # statement a new text for every number of terms.
    rows = dict(
        bound_rows(
            "SELECT term, df FROM memories_lexicalterm"
            " WHERE workspace_id = %(ws)s AND term = ANY(%(terms)s::text[])",
            {"ws": workspace.pk, "terms": [*terms, STAT_DOCS, STAT_LENGTH, STAT_SWAPPING]},
        )
    )
    docs = max(rows.pop(STAT_DOCS, 0), 0)
    length = max(rows.pop(STAT_LENGTH, 0), 0)
    swapping = rows.pop(STAT_SWAPPING, 0) > 0
    return LexicalStats(
        docs=docs, avg_length=(length / docs) if docs else 1.0, df=rows, swapping=swapping
    )


@dataclass
class LexicalHit:
    id: int
    bm25: float
    matched_idf: float  # how much of the query's idf mass this entry contains
    exact_case: bool  # contains an identifier of the query in its exact case
    cosine: float | None = None  # to the query vector, when the arm was given one
    phrase: bool = False  # contains the query's words verbatim and in order
    seen: Seen | None = None


@dataclass
class LexicalResult:
    hits: list[LexicalHit]
    total_idf: float

    def coverage(self, hit: LexicalHit) -> float:
        return hit.matched_idf / self.total_idf if self.total_idf else 0.0


def _rare_terms(known: Sequence[str], df: dict[str, int]) -> list[str]:
    """The rarest terms whose postings fit the budget (always at least one)."""
    selected: list[str] = []
    postings = 0
    for term in sorted(known, key=lambda t: df[t]):
        if selected and postings + df[term] > LEXICAL_POSTINGS_BUDGET:
            break
        selected.append(term)
        postings += df[term]
    return selected


def _exact_case_patterns(identifiers: Sequence[str]) -> list[str]:
    # An identifier counts as present in its exact case only as a whole
    # token: not inside a longer word, though a sentence's full stop may follow.
    return [
        r"(^|[^\w.:/+-])" + re.escape(ident) + r"([^\w:/+-]|[.:/+-](?!\w)|$)"
        for ident in identifiers
    ]


PHRASE_MIN_WORDS = 3
# A passage quoted from memory is a sentence or a few; a longer query (a
# pasted trace) is matched by its terms alone: its pattern would cost Postgres
# a scan per row and, past some thousands of words, be refused as too complex.
PHRASE_MAX_WORDS = 64


def _phrase_pattern(text: str) -> str | None:
    """A case-insensitive regex for the query's words in order, any punctuation between.

    BM25 ignores word order, so a passage quoted from memory ties with every
    entry that merely shares its words; an in-order match breaks the tie.
    """
    words = re.findall(r"\w+", text)
    if not PHRASE_MIN_WORDS <= len(words) <= PHRASE_MAX_WORDS:
        return None
    return r"\m" + r"\W+".join(re.escape(w) for w in words) + r"\M"


# BM25 of the row `m` over the query's terms, as `s.bm25` (NULL when the row
# holds none of them) and `s.matched_idf`. Each row's term map is read once,
# by a per-row aggregate: a join to the query terms would drag every row
# through a sort.
_BM25_LATERAL = """
    CROSS JOIN LATERAL (
        SELECT SUM(q.idf * (t.tf * (%(k1)s + 1))
                   / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * m.lex_len / %(avgdl)s)))
                   AS bm25,
               SUM(q.mass) AS matched_idf
        FROM unnest(%(terms)s::text[], %(idfs)s::float8[], %(masses)s::float8[])
             AS q(term, idf, mass)
        CROSS JOIN LATERAL (SELECT (m.lex ->> q.term)::float8 AS tf) t
        WHERE t.tf IS NOT NULL
    ) s"""


@dataclass
class LexicalFeatures:
    """A query's lexical side, as parameters of the statements that score it."""

    params: dict[str, Any]
    selected: list[str]  # the rare terms whose postings are the candidates
    total_idf: float

    @classmethod
    def none(cls) -> LexicalFeatures:
        return cls.of(
            lexical.Query(terms=[], identifiers=[]), LexicalStats(docs=0, avg_length=1.0, df={}), ""
        )

    @classmethod
    def of(cls, query: lexical.Query, stats: LexicalStats, text: str) -> LexicalFeatures:
        # A word's written form adds to the score of the entries that hold it
        # as written, but is no part of how much of the query an entry holds
        # (its stem counts that) and finds no candidates its stem would not.
        # A request's own words ("tell me what you remember") count for
        # little: they say how to answer, not what about (memories.framing).
        weights = framing_weights(query.terms)
        exact = {t for t in query.terms if lexical.is_exact_form(t)}
        idfs = {t: lexical.idf(stats.df.get(t, 0), stats.docs) * weights[t] for t in query.terms}
        masses = {t: 0.0 if t in exact else v for t, v in idfs.items()}
        found = [t for t in query.terms if stats.df.get(t, 0) > 0 and t not in exact]
        known = [t for t in found if weights[t] == 1.0] or found
        patterns = _exact_case_patterns(query.identifiers)
        phrase = _phrase_pattern(text)
        params = {
            "terms": list(idfs),
            "idfs": [v * lexical.EXACT_FORM_WEIGHT if t in exact else v for t, v in idfs.items()],
            "masses": list(masses.values()),
            "avgdl": stats.avg_length,
            "k1": lexical.K1,
            "b": lexical.B,
            "patterns": patterns or [""],
            "has_patterns": bool(patterns),
            "phrase": phrase or "",
            "has_phrase": phrase is not None,
        }
        return cls(
            params=params,
            selected=_rare_terms(known, stats.df) if known else [],
            total_idf=_query_idf_mass({t: v for t, v in idfs.items() if t not in exact}, stats.df),
        )


def lexical_statement(
    *,
    workspace: Workspace,
    features: LexicalFeatures,
    filters: MemoryFilters,
    limit: int = LEXICAL_CANDIDATES,
    also_ids: Sequence[int] = (),
    vector: QueryVector | None = None,
    model_id: str = "",
) -> tuple[str, dict[str, Any]] | None:
    """The lexical arm's statement, or None when no entry can match.

    BM25 over the entries holding the query's rarer terms (plus `also_ids`).
    With `vector` (from `model_id`), each hit also carries its cosine to it,
    read in the same statement (fusion needs it for the hits the dense arm
    did not bring); an entry embedded by another model has none.
    """
    if not features.selected and not also_ids:
        return None
    params: dict[str, Any] = {
        **features.params,
        "ws": workspace.pk,
        "selected": features.selected,
        "also": list(also_ids),
        "n": limit,
        "q": _vector_param(vector) if vector is not None else None,
        "model": model_id,
    }
    where = filters.sql(params)
    cosine = (
        """CASE WHEN m.embedding_model = %(model)s THEN 1 - (m.embedding <=> %(q)s::vector)
                WHEN m.embedding_next_model = %(model)s
                THEN 1 - (m.embedding_next <=> %(q)s::vector) END"""
        if vector is not None
        else "NULL::float8"
    )
    # Raw SQL: BM25 over a jsonb term map has no ORM spelling. Uses index:
    # memory_lex_gin (lex ?| selected terms). The exact-case regexes and the
    # cosine run on the `limit` winners only, not on every candidate.
    sql = f"""
        WITH scored AS (
            SELECT m.id, s.bm25, s.matched_idf
            FROM memories_memory m
            {_BM25_LATERAL}
            WHERE m.workspace_id = %(ws)s
              AND (m.lex ?| %(selected)s::text[] OR m.id = ANY(%(also)s::bigint[]))
              AND s.bm25 IS NOT NULL {where}
            ORDER BY s.bm25 DESC, m.id DESC
            LIMIT %(n)s
        )
        SELECT s.id, s.bm25, s.matched_idf,
               %(has_patterns)s AND m.text ~ ANY(%(patterns)s),
               {cosine},
               %(has_phrase)s AND m.text ~* %(phrase)s,
               {_HIT.sql}
        FROM scored s JOIN memories_memory m ON m.id = s.id
        ORDER BY s.bm25 DESC, s.id DESC
    """
    return sql, params


def _lexical_hits(rows: list[tuple[Any, ...]]) -> list[LexicalHit]:
    return [
        LexicalHit(
            id=int(r[0]),
            bm25=float(r[1]),
            matched_idf=float(r[2]),
            exact_case=bool(r[3]),
            cosine=None if r[4] is None else float(r[4]),
            phrase=bool(r[5]),
            seen=Seen(r[6:]),
        )
        for r in rows
    ]


def lexical_arm(
    *,
    workspace: Workspace,
    query: lexical.Query,
    filters: MemoryFilters,
    limit: int = LEXICAL_CANDIDATES,
    also_ids: Sequence[int] = (),
    stats: LexicalStats | None = None,
    vector: QueryVector | None = None,
    text: str = "",
    model_id: str = "",
) -> LexicalResult:
    """The lexical arm on its own (see lexical_statement). With the query's
    `text`, each hit says whether it holds it as a phrase."""
    if query.is_empty:
        return LexicalResult(hits=[], total_idf=0.0)
    if stats is None:
        stats = lexical_stats(workspace=workspace, terms=query.terms)
    features = LexicalFeatures.of(query, stats, text)
    statement = lexical_statement(
        workspace=workspace,
        features=features,
        filters=filters,
        limit=limit,
        also_ids=also_ids,
        vector=vector,
        model_id=model_id,
    )
    if statement is None:
        return LexicalResult(hits=[], total_idf=0.0)
    return LexicalResult(hits=_lexical_hits(bound_rows(*statement)), total_idf=features.total_idf)


def _query_idf_mass(idfs: dict[str, float], df: dict[str, int]) -> float:
    """The idf a perfect match would hold, for coverage.

    A joined term no entry holds whole (`var/log`, a piece of the path
    `/var/log/app.log`) is still found through its parts; counting its own
    large idf would make every match look partial and distrust the lexical
    arm on exactly the identifier queries it answers best.
    """
    total = 0.0
    for term, value in idfs.items():
        parts = lexical.compound_parts(term) if df.get(term, 0) == 0 else []
        if parts and all(df.get(p, 0) > 0 for p in parts) and all(p in idfs for p in parts):
            continue
        total += value
    return total
