"""Reads of the memory engine: recall (dense, lexical, fused), states, lists,
conflicts, insights, session packs, stats and the ledger.

Raw SQL lives here and only here, each statement with a comment saying why
the ORM would not do.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import numpy as np
from django.db import connection
from django.db.models import Avg, Count, Max, Min, Q, QuerySet
from django.utils import timezone
from psycopg_pool import PoolTimeout

from contexts.db import Columns, bound_rows
from contexts.errors import NotFound
from contexts.fairness import heavy_read
from contexts.models import Workspace
from memflow_site.side_threads import side_executor
from memories import embeddings, lexical
from memories.conf import conflict_cosine, memory_setting
from memories.decay import retention, retention_sql
from memories.embeddings import Embedder
from memories.models import InjectionEvent, LexicalTerm, Memory, WorkspaceEmbedder

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Special LexicalTerm rows holding the workspace's document count and total
# length; a real term never contains a space.
STAT_DOCS = " docs"
STAT_LENGTH = " length"
# Present (df 1) while a re-embed exchanges the workspace's vector columns in
# chunks: read with the statistics recall reads anyway, it costs no query.
STAT_SWAPPING = " swapping"

DENSE_CANDIDATES = 50
LEXICAL_CANDIDATES = 50
# The lexical arm scores only documents containing one of the query's rarer
# terms, chosen until their document frequencies add up to this: it bounds
# the work of a query full of common words. At 100,000 memories 500 gave the
# same recall@k as 1,000 (the dense arm's hits are scored as well) and cut
# the arm from 10.4 / 21.3 to 7.7 / 13.6 ms (p50 / p95).
LEXICAL_POSTINGS_BUDGET = 500


def _vector_literal(vector: np.ndarray | Sequence[float]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


# A query vector as a statement parameter: its text form, which the server
# types as `vector` from the cast beside it. (A `float8[]` parameter, sent
# binary, made the dense arm 1.8 ms slower: the cast ran again for every row.)
QueryVector = np.ndarray | Sequence[float] | str


def _vector_param(vector: QueryVector) -> str:
    """The text form of a query vector; one recall computes it once (~0.4 ms) for both arms."""
    return vector if isinstance(vector, str) else _vector_literal(vector)


# How long recall waits for a free second connection before it runs its arms
# one after the other instead.
SIDE_CONNECTION_WAIT_S = 0.002


def beside(
    main: Callable[[], T], sql: str, params: dict[str, Any]
) -> tuple[T, list[tuple[Any, ...]]]:
    """`main()` here, and the statement `sql` at the same time on a second connection.

    Recall's two arms are independent statements of 5-10 ms each; on two
    cores the database runs them side by side. The second connection comes
    from the pool of `memflow serve` (MEMFLOW_DB_POOL) when one is free at
    once, and only in autocommit: another connection cannot see this one's
    uncommitted writes. Otherwise (no pool, a transaction, a busy pool) the
    statement runs here, after `main`.
    """
    connection.ensure_connection()  # (which opens the pool, if there is one)
    pool: Any = getattr(connection, "pool", None)  # Django's psycopg_pool, None without one
    side = None
    if pool is not None and not connection.in_atomic_block:
        try:
            side = pool.getconn(timeout=SIDE_CONNECTION_WAIT_S)
        except PoolTimeout:
            side = None
    if side is None:
        result = main()
        return result, bound_rows(sql, params)
    try:
        future = side_executor().submit(bound_rows, sql, params, side)
        try:
            result = main()
        finally:
            wait([future])  # the connection goes back only once its statement is done
        with connection.wrap_database_errors:
            return result, future.result()
    finally:
        pool.putconn(side)


# --- single entries -----------------------------------------------------------


def memory_get(*, workspace: Workspace, memory_id: int) -> Memory:
    memory = Memory.objects.filter(workspace=workspace, pk=memory_id).first()
    if memory is None:
        raise NotFound(f"No memory #{memory_id} in this workspace.", code="memory_not_found")
    return memory


@dataclass(frozen=True)
class MemoryFilters:
    compartment: str | None = None
    compartments: Sequence[str] | None = None
    source: str | None = None
    app: str | None = None
    state_key: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False
    exclude_compartments: Sequence[str] = ()

    def sql(self, params: dict[str, Any], alias: str = "m") -> str:
        """A WHERE fragment (starting with AND) for these filters."""
        parts = []
        if not self.include_superseded:
            parts.append(f"{alias}.valid_to IS NULL")
        if self.compartment is not None:
            params["f_compartment"] = self.compartment
            parts.append(f"{alias}.compartment = %(f_compartment)s")
        if self.compartments is not None:
            params["f_compartments"] = list(self.compartments)
            parts.append(f"{alias}.compartment = ANY(%(f_compartments)s)")
        if self.exclude_compartments:
            params["f_exclude"] = list(self.exclude_compartments)
            parts.append(f"NOT ({alias}.compartment = ANY(%(f_exclude)s))")
        for name in ("source", "app", "state_key"):
            value = getattr(self, name)
            if value is not None:
                params[f"f_{name}"] = value
                parts.append(f"{alias}.{name} = %(f_{name})s")
        if self.since is not None:
            params["f_since"] = self.since
            parts.append(f"{alias}.created_at >= %(f_since)s")
        if self.until is not None:
            params["f_until"] = self.until
            parts.append(f"{alias}.created_at < %(f_until)s")
        return "".join(f" AND {p}" for p in parts)

    def queryset(self, qs: QuerySet[Memory]) -> QuerySet[Memory]:
        if not self.include_superseded:
            qs = qs.filter(valid_to__isnull=True)
        if self.compartment is not None:
            qs = qs.filter(compartment=self.compartment)
        if self.compartments is not None:
            qs = qs.filter(compartment__in=list(self.compartments))
        if self.exclude_compartments:
            qs = qs.exclude(compartment__in=list(self.exclude_compartments))
        for name in ("source", "app", "state_key"):
            value = getattr(self, name)
            if value is not None:
                qs = qs.filter(**{name: value})
        if self.since is not None:
            qs = qs.filter(created_at__gte=self.since)
        if self.until is not None:
            qs = qs.filter(created_at__lt=self.until)
        return qs


def memory_list(
    *, workspace: Workspace, filters: MemoryFilters, contains: str | None = None
) -> QuerySet[Memory]:
    qs = filters.queryset(Memory.objects.filter(workspace=workspace))
    if contains:
        # Uses index: memory_text_trgm (substring search over paths, IDs, CJK).
        qs = qs.filter(text__icontains=contains)
    return qs.order_by("-created_at", "-id")


# --- the workspace's embedder -------------------------------------------------


def serving_backend(*, workspace: Workspace) -> str:
    """The backend whose vectors are in `Memory.embedding` for this workspace."""
    # Raw SQL (contexts.db): every hook and every write asks, some twice.
    found = bound_rows(_SERVING_SQL, {"ws": workspace.pk})
    return str(found[0][0]) if found else embeddings.DEFAULT_BACKEND


_SERVING_SQL = f"SELECT backend FROM {WorkspaceEmbedder._meta.db_table} WHERE workspace_id = %(ws)s"


def embedder_for(workspace: Workspace) -> Embedder:
    """The embedder every path uses for this workspace: what recall searches, what is stored.

    During a re-embed this stays the old one until the new vectors are all
    in place (`services.workspace_embedder_set`).
    """
    return embeddings.get_embedder(serving_backend(workspace=workspace))


@dataclass
class EmbedderStatus:
    requested: str  # settings["embedder"]
    serving: str  # the backend recall uses now
    target: str  # the backend being re-embedded into, "" if none
    done: int
    total: int
    error: str
    heartbeat_at: datetime | None
    swapping: bool = False  # the new vectors are being exchanged in (done/total: rows)
    # Current rows whose vector is not the serving model's (the dense arm skips them).
    stale: int | None = None

    @property
    def state(self) -> str:
        if self.error:
            return "failed"
        if self.swapping:
            return "swapping in"
        if self.target:
            return "re-embedding"
        if self.requested != self.serving:
            return "pending"
        return "ready"


def workspace_embedder_status(
    *, workspace: Workspace, model_id: str | None = None
) -> EmbedderStatus:
    """The workspace's embedder choice, the one serving, and any re-embed's progress.

    With `model_id` (the serving model's id), also counts the current rows
    embedded by another model.
    """
    row = WorkspaceEmbedder.objects.filter(workspace=workspace).first()
    status = EmbedderStatus(
        requested=str(memory_setting(workspace, "embedder")),
        serving=row.backend if row else embeddings.DEFAULT_BACKEND,
        target=row.target_backend if row else "",
        done=row.done if row else 0,
        total=row.total if row else 0,
        error=row.error if row else "",
        heartbeat_at=row.heartbeat_at if row else None,
        swapping=row.swapping if row else False,
    )
    if model_id is not None:
        status.stale = (
            Memory.objects.filter(workspace=workspace, valid_to__isnull=True)
            .exclude(embedding_model=model_id)
            .count()
        )
    return status


# --- the two arms of recall ---------------------------------------------------


# Below this many entries a workspace is searched exactly (a scan of its own
# rows through memory_recent_idx) rather than through the shared HNSW index:
# exact is perfect and, at ~3 µs a distance, as fast there; a filtered HNSW
# scan of a small workspace inside a large table wades through other
# workspaces' rows instead.
EXACT_SCAN_BELOW = 3_000
# A batch of dedupe probes is compared exactly while probes x rows stays
# under this (about half a second of distance computations).
EXACT_PROBE_BUDGET = 150_000


def workspace_size(*, workspace: Workspace) -> int:
    row = (
        LexicalTerm.objects.filter(workspace=workspace, term=STAT_DOCS)
        .values_list("df", flat=True)
        .first()
    )
    return int(row or 0)


def _distance_order(
    workspace: Workspace,
    vector_sql: str,
    alias: str = "m",
    filters: MemoryFilters | None = None,
    size: int | None = None,
) -> str:
    """ORDER BY expression: the bare operator lets the HNSW index serve it, `+ 0` makes it exact.

    Exact when the rows that can match are few: a small workspace, or a
    compartment filter (lessons, the archive) that leaves few rows — a
    filtered HNSW scan would otherwise wade through thousands of others.
    """
    expr = f"{alias}.embedding <=> {vector_sql}"
    if size is None:
        size = workspace_size(workspace=workspace)
    if (
        size >= EXACT_SCAN_BELOW
        and filters is not None
        and (filters.compartment is not None or filters.compartments)
    ):
        names = (
            [filters.compartment]
            if filters.compartment is not None
            else list(filters.compartments or [])
        )
        # Uses index: memory_compartment_idx.
        size = Memory.objects.filter(
            workspace=workspace, valid_to__isnull=True, compartment__in=names
        ).count()
    return expr if size >= EXACT_SCAN_BELOW else f"({expr}) + 0"


# Filtered HNSW scans keep going until enough rows pass the filter (pgvector
# 0.8 iterative scans), so a workspace's results are not cut short by other
# workspaces' rows in the same index. Set once per connection (see
# MemoriesConfig.ready): per-query SET LOCAL cost a transaction and three
# round trips on every recall.
#
# GIN indexes (the lexical arm's `memory_lex_gin`) queue new entries in a
# pending list that every lookup scans in full until it is folded in at
# gin_pending_list_limit (4 MB by default). At 100,000 memories a few hundred
# pending pages made the lexical arm's index scan 1-2.7 ms instead of
# 0.07-0.15 ms, and a stream of captured prompts keeps the list from ever
# emptying. 64 kB keeps lookups fast while a capture still writes in batches;
# a bulk import raises it for its own run (`bulk_index_writes`), where the
# batching is worth ~15% of the throughput.
GIN_PENDING_LIST_KB = 64
GIN_PENDING_LIST_BULK_KB = 4096
SEARCH_SETTINGS = (
    "SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = 64; "
    f"SET gin_pending_list_limit = '{GIN_PENDING_LIST_KB}kB'"
)


# The database connections that have them: a pooled connection keeps its
# session settings from one checkout to the next, and Django announces every
# checkout as a new connection (a round trip on every request otherwise).
_configured: weakref.WeakSet[Any] = weakref.WeakSet()


def search_settings_apply(*, sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created` receiver: the HNSW search settings for this connection."""
    if connection.vendor != "postgresql" or connection.connection in _configured:
        return
    with connection.cursor() as cursor:
        cursor.execute(SEARCH_SETTINGS)
    _configured.add(connection.connection)


# Of the memory's columns, what recall's callers read: the vectors and the
# term map stay in the database. Each arm reads them with its hits, so the
# final rows need no statement of their own.
_HIT = Columns(
    Memory,
    [
        f
        for f in Memory._meta.concrete_fields
        if f.name not in ("embedding", "embedding_next", "lex")
    ],
    "m",
)
_LAST_ACCESSED, _ACCESS_COUNT, _SOURCE = (
    _HIT.index(n) for n in ("last_accessed", "access_count", "source")
)


@dataclass
class Seen:
    """An entry's columns (those of _HIT), as read by the arm that found it."""

    row: tuple[Any, ...]

    @property
    def last_accessed(self) -> datetime:
        value: datetime = self.row[_LAST_ACCESSED]
        return value

    @property
    def access_count(self) -> int:
        return int(self.row[_ACCESS_COUNT])

    @property
    def source(self) -> str:
        return str(self.row[_SOURCE])

    def memory(self) -> Memory:
        """The entry as a model instance (only the winners become one)."""
        memory: Memory = _HIT.instance(self.row)
        return memory


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
        # Each row's vector of the model, from whichever column holds it.
        nearest = f"""
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
    else:
        # The model filter keeps the HNSW index usable: nearly every row
        # passes it, and the iterative scan goes on until enough have.
        order = _distance_order(workspace, "%(q)s::vector", filters=filters, size=size)
        nearest = f"""
            SELECT m.id, m.embedding <=> %(q)s::vector AS dist
            FROM memories_memory m
            WHERE m.workspace_id = %(ws)s AND m.embedding IS NOT NULL
              AND m.embedding_model = %(model)s {where}
            ORDER BY {order}
            LIMIT %(n)s
        """
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
    hits = []
    for r in bound_rows(sql, params):
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
        hits.append(hit)
    return hits


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


def reembed_swapping(*, workspace: Workspace) -> bool:
    return LexicalTerm.objects.filter(workspace=workspace, term=STAT_SWAPPING, df__gt=0).exists()


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


def _phrase_pattern(text: str) -> str | None:
    """A case-insensitive regex for the query's words in order, any punctuation between.

    BM25 ignores word order, so a passage quoted from memory ties with every
    entry that merely shares its words; an in-order match breaks the tie.
    """
    words = re.findall(r"\w+", text)
    if len(words) < PHRASE_MIN_WORDS:
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
               SUM(q.idf) AS matched_idf
        FROM unnest(%(terms)s::text[], %(idfs)s::float8[]) AS q(term, idf)
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
        idfs = {t: lexical.idf(stats.df.get(t, 0), stats.docs) for t in query.terms}
        known = [t for t in query.terms if stats.df.get(t, 0) > 0]
        patterns = _exact_case_patterns(query.identifiers)
        phrase = _phrase_pattern(text)
        params = {
            "terms": list(idfs),
            "idfs": list(idfs.values()),
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
            total_idf=_query_idf_mass(idfs, stats.df),
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


# --- fusion -------------------------------------------------------------------


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


def fuse(
    *,
    query: lexical.Query,
    dense: list[tuple[int, float]],
    lexical_result: LexicalResult,
    cosines: dict[int, float],
    dense_blind: bool = False,
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
    (a quoted passage) gets one too. A tiny RRF term breaks near-ties.

    `dense_blind`: the query is mostly in a script the embedding model cannot
    read (Chinese for all-MiniLM-L6-v2, whose vocabulary turns most of it
    into unknown tokens): the lexical arm is trusted whatever its coverage.
    """
    lex_by_id = {hit.id: hit for hit in lexical_result.hits}
    ids = list(dict.fromkeys([i for i, _ in dense] + [h.id for h in lexical_result.hits]))
    if not ids:
        return Fusion(lexical_weight=0.0, reason="no candidates")
    dense_rank = {i: r for r, (i, _) in enumerate(dense)}
    lexical_rank = {h.id: r for r, h in enumerate(lexical_result.hits)}
    best_bm25 = max((h.bm25 for h in lexical_result.hits), default=0.0)
    best_coverage = max((lexical_result.coverage(h) for h in lexical_result.hits), default=0.0)

    if best_bm25 <= 0:
        weight, reason = 0.0, "no lexical match"
    else:
        slide = min(max((best_coverage - 0.5) / 0.4, 0.0), 1.0)
        weight = 0.1 + 0.8 * slide
        reason = f"best lexical coverage {best_coverage:.2f}"
        if query.identifier_share >= 0.5 and any(h.exact_case for h in lexical_result.hits):
            weight = max(weight, 0.7)
            reason += ", identifier query"
        if dense_blind:
            weight = max(weight, DENSE_BLIND_WEIGHT)
            reason += ", a script the embedding model cannot read"

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
        # Reciprocal ranks only break near-ties.
        score += 0.1 * (
            1 / (RRF_K + dense_rank.get(i, 1000)) + 1 / (RRF_K + lexical_rank.get(i, 1000))
        )
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
    scored.sort(key=lambda s: (-s.score, -s.id))
    return Fusion(lexical_weight=weight, reason=reason, candidates=scored)


# --- recall ---------------------------------------------------------------------


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
    vector: np.ndarray | Callable[[], np.ndarray] | None = None,
    vector_model: str | None = None,
    arms: str = "hybrid",
    now: datetime | None = None,
) -> RecallResult:
    """Hybrid recall, weighted by retention. Reads only: rehearsal is the caller's.

    `vector`, when given, is the query's embedding by `vector_model` (by
    default, the workspace's serving embedder, as a query), or a function
    that waits for it: called once the term statistics are read, so that an
    embedding still under way (a hook's) overlaps that statement. Without
    it the query is embedded here. `arms` is "hybrid", "dense" or "lexical" (the
    single arms serve the quality bench and debugging).

    Three statements: the term statistics, the dense arm (with the lexical
    features of its hits) and the lexical arm (with the cosines of its
    hits), each hit with the columns of its row.
    """
    filters = filters or MemoryFilters()
    now = now or timezone.now()
    parsed = lexical.parse_query(query)
    # One read of the term statistics serves both arms (the document count
    # decides exact vs HNSW, and BM25 needs it too).
    stats = lexical_stats(workspace=workspace, terms=parsed.terms)
    features = LexicalFeatures.of(parsed, stats, query)
    if callable(vector):
        vector = vector()
    if arms in ("hybrid", "dense") and (vector is None or vector_model is None):
        try:
            embedder = embedder_for(workspace)
        except embeddings.EmbedderUnavailable:
            # The workspace's embedder is not installed here: its entries
            # stay findable by their words rather than not at all.
            logger.warning("recall in %s falls back to the lexical arm", workspace.slug)
            arms = "lexical"
        else:
            if vector is None:
                vector = embedder.encode_query(query)
            vector_model = embedder.model_id
    query_vector = _vector_param(vector) if vector is not None else None
    statement = None
    if arms in ("hybrid", "lexical") and not parsed.is_empty:
        statement = lexical_statement(
            workspace=workspace,
            features=features,
            filters=filters,
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
    lexical_result = LexicalResult(hits=_lexical_hits(rows), total_idf=features.total_idf)
    seen: dict[int, Seen] = {h.id: h.seen for h in lexical_result.hits if h.seen is not None}
    seen.update((h.id, h.seen) for h in dense)
    if arms == "dense":
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
    elif arms == "lexical":
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
    else:
        lexical_result = _merge_lexical(lexical_result, dense, LEXICAL_CANDIDATES)
        cosines = {h.id: h.cosine for h in dense}
        for hit in lexical_result.hits:
            if hit.cosine is not None:
                cosines.setdefault(hit.id, hit.cosine)
        blind = (
            parsed.cjk_share >= DENSE_BLIND_SHARE
            and vector_model is not None
            and not embeddings.covers_cjk(vector_model)
        )
        fusion = fuse(
            query=parsed,
            dense=[(h.id, h.cosine) for h in dense],
            lexical_result=lexical_result,
            cosines=cosines,
            dense_blind=blind,
        )

    tau = float(memory_setting(workspace, "decay_tau_days"))
    weighed = []
    for s in fusion.candidates[: max(k * 3, k)]:
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
        weighed.append((weighted, r, s))
    weighed.sort(key=lambda w: (-w[0], -w[2].id))
    weighed = weighed[:k]
    loaded = {s.id: seen[s.id].memory() for _, _, s in weighed}
    hits = [
        Hit(memory=loaded[s.id], score=weighted, retention=r, cosine=s.cosine, bm25=s.bm25)
        for weighted, r, s in weighed
        if s.id in loaded
    ]
    return RecallResult(hits=hits, fusion=fusion)


# --- states ---------------------------------------------------------------------


def state_current(*, workspace: Workspace, key: str) -> Memory:
    memory = Memory.objects.filter(
        workspace=workspace, state_key=key, valid_to__isnull=True
    ).first()
    if memory is None:
        raise NotFound(f"No current value for state {key!r}.", code="state_not_found")
    return memory


def state_history(*, workspace: Workspace, key: str) -> list[Memory]:
    # Uses index: memory_state_history_idx.
    chain = list(
        Memory.objects.filter(workspace=workspace, state_key=key)
        .select_related("workspace", "session")
        .order_by("valid_from", "id")
    )
    if not chain:
        raise NotFound(f"No state {key!r}.", code="state_not_found")
    return chain


def state_keys(*, workspace: Workspace) -> QuerySet[Memory]:
    return (
        Memory.objects.filter(workspace=workspace, valid_to__isnull=True)
        .exclude(state_key="")
        .select_related("workspace", "session")
        .order_by("state_key")
    )


# --- conflicts and insights --------------------------------------------------------


@dataclass
class Conflict:
    a: Memory
    b: Memory
    cosine: float


def memory_conflicts(
    *, workspace: Workspace, threshold: float | None = None, scan: int = 500, limit: int = 50
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
    order = _distance_order(workspace, "r.embedding")
    # Raw SQL: a lateral nearest-neighbour probe per recent entry.
    sql = f"""
        WITH recent AS (
            SELECT id, embedding, norm_hash FROM memories_memory
            WHERE workspace_id = %(ws)s AND valid_to IS NULL AND embedding IS NOT NULL
              AND embedding_model = %(model)s
            ORDER BY created_at DESC LIMIT %(scan)s
        )
        SELECT DISTINCT LEAST(r.id, n.id), GREATEST(r.id, n.id), n.cos
        FROM recent r
        CROSS JOIN LATERAL (
            SELECT m.id, 1 - (m.embedding <=> r.embedding) AS cos, m.norm_hash
            FROM memories_memory m
            WHERE m.workspace_id = %(ws)s AND m.valid_to IS NULL AND m.id <> r.id
              AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s
            ORDER BY {order} LIMIT 3
        ) n
        WHERE n.cos >= %(t)s AND n.norm_hash <> r.norm_hash
        ORDER BY n.cos DESC LIMIT %(limit)s
    """
    with heavy_read("conflicts"), connection.cursor() as cursor:
        cursor.execute(sql, params)
        pairs = cursor.fetchall()
    rows = Memory.objects.select_related("workspace", "session").in_bulk(
        {i for a, b, _ in pairs for i in (a, b)}
    )
    return [
        Conflict(a=rows[a], b=rows[b], cosine=float(c))
        for a, b, c in pairs
        if a in rows and b in rows
    ]


def memory_fading(
    *, workspace: Workspace, below: float = 0.5, limit: int = 50, now: datetime | None = None
) -> list[tuple[Memory, float]]:
    """High-value entries (the model's or imported) whose retention is falling below `below`."""
    now = now or timezone.now()
    tau = float(memory_setting(workspace, "decay_tau_days"))
    # Raw SQL: the retention formula evaluated by the database, so that only
    # the fading rows travel.
    sql = f"""
        SELECT m.id, {retention_sql("%(now)s", "%(tau)s")} AS r
        FROM memories_memory m
        WHERE m.workspace_id = %(ws)s AND m.valid_to IS NULL AND NOT m.pinned
          AND m.source IN ('model', 'import')
          AND {retention_sql("%(now)s", "%(tau)s")} < %(below)s
        ORDER BY r ASC LIMIT %(limit)s
    """
    with heavy_read("insights"), connection.cursor() as cursor:
        cursor.execute(
            sql, {"ws": workspace.pk, "now": now, "tau": tau, "below": below, "limit": limit}
        )
        found = cursor.fetchall()
    rows = Memory.objects.select_related("workspace", "session").in_bulk([i for i, _ in found])
    return [(rows[i], float(r)) for i, r in found if i in rows]


def memory_below_retention(*, workspace: Workspace, now: datetime) -> list[tuple[int, float, str]]:
    """Cleanup candidates: (id, retention, source) under the workspace's thresholds, or expired."""
    tau = float(memory_setting(workspace, "decay_tau_days"))
    plain = float(memory_setting(workspace, "cleanup_threshold"))
    valuable = float(memory_setting(workspace, "cleanup_threshold_valuable"))
    expr = retention_sql("%(now)s", "%(tau)s")
    # Raw SQL: as in memory_fading.
    sql = f"""
        SELECT m.id, {expr} AS r, m.source FROM memories_memory m
        WHERE m.workspace_id = %(ws)s AND NOT m.pinned
          AND ({expr} < CASE WHEN m.source IN ('model', 'import') THEN %(valuable)s ELSE %(plain)s END
               OR m.expires_at < %(now)s)
        ORDER BY m.id
    """
    with connection.cursor() as cursor:
        cursor.execute(
            sql, {"ws": workspace.pk, "now": now, "tau": tau, "plain": plain, "valuable": valuable}
        )
        return [(int(i), float(r), str(s)) for i, r, s in cursor.fetchall()]


# --- session pack and stats -------------------------------------------------------------


@dataclass
class SessionPack:
    trail: list[Memory]
    conclusions: list[Memory]


def cut_at_sentence(text: str, limit: int) -> str:
    """At most `limit` characters, ending at a sentence end when one is near."""
    if len(text) <= limit:
        return text
    window = text[:limit]
    ends = [window.rfind(mark) for mark in (". ", "\u3002", "! ", "? ", "\uff01", "\uff1f", "\n")]
    cut = max(ends)
    if cut >= limit // 2:
        return window[: cut + 1].rstrip()
    return window.rstrip() + "…"


def session_pack(
    *, workspace: Workspace, minutes: int = 180, now: datetime | None = None
) -> SessionPack:
    now = now or timezone.now()
    since = now - timedelta(minutes=minutes)
    trail = list(
        Memory.objects.filter(workspace=workspace, valid_to__isnull=True, created_at__gte=since)
        .exclude(compartment="lessons")
        .order_by("-created_at", "-id")[:15]
    )
    trail.reverse()  # oldest first: a trail reads forward
    conclusions = list(
        Memory.objects.filter(
            workspace=workspace,
            valid_to__isnull=True,
            source__in=[Memory.Source.MODEL, Memory.Source.CONSOLIDATION],
        )
        .exclude(pk__in=[m.pk for m in trail])
        .order_by("-created_at", "-id")[:5]
    )
    return SessionPack(trail=trail, conclusions=conclusions)


def memory_stats(*, workspace: Workspace, now: datetime | None = None) -> dict[str, Any]:
    now = now or timezone.now()
    with heavy_read("stats"):
        return _memory_stats(workspace=workspace, now=now)


def _memory_stats(*, workspace: Workspace, now: datetime) -> dict[str, Any]:
    all_rows = Memory.objects.filter(workspace=workspace)
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


def ledger_summary(
    *, workspace: Workspace, session_id: str | None = None, top: int = 10
) -> dict[str, Any]:
    """Injection → use rates: of the ids injected into a session, how many were then used."""
    with heavy_read("ledger"):
        return _ledger_summary(workspace=workspace, session_id=session_id, top=top)


def _ledger_summary(*, workspace: Workspace, session_id: str | None, top: int) -> dict[str, Any]:
    events = InjectionEvent.objects.filter(workspace=workspace)
    if session_id is not None:
        events = events.filter(session__external_id=session_id)
    injected = set(
        events.filter(kind=InjectionEvent.Kind.INJECTED).values_list("session_id", "memory_id")
    )
    uses: dict[str, set[tuple[int, int]]] = {}
    for kind in (
        InjectionEvent.Kind.EXPANDED,
        InjectionEvent.Kind.RECALLED,
        InjectionEvent.Kind.SUPERSEDED,
    ):
        uses[kind] = set(events.filter(kind=kind).values_list("session_id", "memory_id")) & injected
    used_any = set().union(*uses.values()) if uses else set()
    hottest = list(
        events.values("memory_id")
        .annotate(n=Count("id"), used=Count("id", filter=~Q(kind=InjectionEvent.Kind.INJECTED)))
        .order_by("-n", "memory_id")[:top]
    )
    n = len(injected)
    return {
        "injected": n,
        "used": len(used_any),
        "use_rate": round(len(used_any) / n, 4) if n else 0.0,
        "by_kind": {kind: len(pairs) for kind, pairs in uses.items()},
        "rates": {kind: (round(len(pairs) / n, 4) if n else 0.0) for kind, pairs in uses.items()},
        "hottest": [
            {"memory_id": h["memory_id"], "events": h["n"], "uses": h["used"]} for h in hottest
        ],
    }


# --- dedupe probes ---------------------------------------------------------------------


def memories_by_norm_hash(
    *, workspace: Workspace, hashes: Sequence[str]
) -> dict[str, list[Memory]]:
    found: dict[str, list[Memory]] = {}
    if not hashes:
        return found
    # Uses index: memory_current_norm_idx. The ids first (raw SQL, see
    # contexts.db): most texts repeat nothing, and then no row is read at all.
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
