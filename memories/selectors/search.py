"""What the search statements share: the statistics rows, query vectors,
exact vs HNSW ordering, the connection settings, the hit columns, and the
second connection recall's arms run on."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from django.db import connection
from psycopg_pool import PoolTimeout

from contexts.models import Workspace
from memflow_site.runtime.db import Columns, bound_rows
from memflow_site.runtime.side_threads import side_executor
from memories.models import LexicalTerm, Memory
from memories.selectors.entries import MemoryFilters

T = TypeVar("T")

# Special LexicalTerm rows holding the workspace's document count and total
# length; a real term never contains a space.
STAT_DOCS = " docs"
STAT_LENGTH = " length"
# Present (df 1) while a re-embed exchanges the workspace's vector columns in
# chunks: read with the statistics recall reads anyway, it costs no query.
STAT_SWAPPING = " swapping"


def _vector_literal(vector: np.ndarray | Sequence[float]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


# A query vector as a statement parameter: its text form, which the server
# types as `vector` from the cast beside it (a binary `float8[]` would be
# cast again for every row).
QueryVector = np.ndarray | Sequence[float] | str


def _vector_param(vector: QueryVector) -> str:
    """The text form of a query vector; one recall computes it once, for both arms."""
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
# gin_pending_list_limit (4 MB by default), and a stream of captured prompts
# keeps a large list from ever emptying. 64 kB keeps lookups fast while a
# capture still writes in batches; a bulk import raises it for its own run
# (`bulk_index_writes`), where batching pays.
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


def reembed_swapping(*, workspace: Workspace) -> bool:
    return LexicalTerm.objects.filter(workspace=workspace, term=STAT_SWAPPING, df__gt=0).exists()
