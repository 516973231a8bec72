"""Upkeep of the GIN indexes' pending lists."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from django.db import DatabaseError, connection, transaction

from memories import selectors

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def bulk_index_writes() -> Iterator[None]:
    """GIN entries batched in a 4 MB pending list while inside; folded in on the way out.

    For a long run of inserts on this connection (an import): the pending
    list amortises index writes, and leaving folds what is still pending
    into the index, so later lookups do not scan it.
    """
    with connection.cursor() as cursor:
        cursor.execute(f"SET gin_pending_list_limit = '{selectors.GIN_PENDING_LIST_BULK_KB}kB'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"SET gin_pending_list_limit = '{selectors.GIN_PENDING_LIST_KB}kB'")
        index_pending_fold()


# The GIN indexes of memories_memory, whose new entries wait in a pending list
# until it is full (then the write that fills it folds it in) or folded.
PENDING_LIST_INDEXES = ("memory_lex_gin", "memory_text_trgm")


def index_pending_fold() -> dict[str, int]:
    """Fold the GIN indexes' pending lists into them now; the pages folded, per index.

    The worker runs it every five minutes (migration 0010), so a hook's
    capture seldom fills a list and pays for folding it.
    """
    folded: dict[str, int] = {}
    for name in PENDING_LIST_INDEXES:
        try:
            # A savepoint: folding needs to own the index, which a
            # DATABASE_URL role may not; then the next vacuum folds it.
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [name])
                folded[name] = int(cursor.fetchone()[0])
        except DatabaseError:
            logger.warning("could not fold the pending list of %s", name, exc_info=True)
    return folded
