"""What every write shares: the workspace lock, the term statistics, an
entry's text columns, and texts embedded before the lock and checked under it."""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from django.db import connection, transaction

from contexts.models import Workspace
from memories import lexical, selectors
from memories.embeddings import Embedder, get_embedder
from memories.models import Memory

if TYPE_CHECKING:
    pass


def _workspace_lock(workspace: Workspace) -> None:
    """Serialise the database part of writes to one workspace (transaction-scoped)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [0x6D66_0002, workspace.pk])


def _lock_key(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big", signed=True)


def _update_term_stats(
    workspace: Workspace, added: Sequence[Memory], removed: Sequence[Memory]
) -> None:
    """Keep document frequencies, the document count and total length exact."""
    delta: Counter[str] = Counter()
    for memory in added:
        delta.update(memory.lex.keys())
        delta[selectors.STAT_DOCS] += 1
        delta[selectors.STAT_LENGTH] += memory.lex_len
    for memory in removed:
        delta.subtract(memory.lex.keys())
        delta[selectors.STAT_DOCS] -= 1
        delta[selectors.STAT_LENGTH] -= memory.lex_len
    terms = sorted(t for t, n in delta.items() if n)  # sorted: a fixed lock order
    if not terms:
        return
    # Raw SQL: one upsert for a whole batch of terms.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO memories_lexicalterm (workspace_id, term, df)
            SELECT %s, t, d FROM unnest(%s::text[], %s::int[]) AS x(t, d)
            ON CONFLICT (workspace_id, term) DO UPDATE SET df = memories_lexicalterm.df + EXCLUDED.df
            """,
            [workspace.pk, terms, [delta[t] for t in terms]],
        )


def _set_text(memory: Memory, text: str, vector: np.ndarray, model_id: str) -> None:
    memory.text = text
    memory.norm_hash = lexical.norm_hash(text)
    memory.embedding = vector
    memory.embedding_model = model_id
    # A re-embed's vector was of the old text: the re-embed computes it again.
    memory.embedding_next = None
    memory.embedding_next_model = ""
    memory.lex, memory.lex_len = lexical.term_frequencies(text)


def _serving_under_lock(workspace: Workspace, embedder: Embedder) -> Embedder:
    """The embedder to store with, read again while holding the workspace lock.

    A re-embed swaps a workspace to its new embedder under that lock, so a
    text embedded just before the swap is embedded again rather than stored
    beside vectors of another model. Returns `embedder` itself when unchanged.
    """
    backend = selectors.serving_backend(workspace=workspace)
    return embedder if backend == embedder.backend else get_embedder(backend)


@dataclass
class Embedded:
    """Texts embedded before the transaction, for a write that stores them under the lock."""

    workspace: Workspace
    texts: list[str]
    embedder: Embedder | None
    vectors: list[np.ndarray]
    checked: bool = False

    def serving(self) -> tuple[Embedder, list[np.ndarray]]:
        """The embedder the workspace stores with now and the texts' vectors by it.

        Call holding the workspace lock. The first call reads the serving
        backend again (see _serving_under_lock) and embeds again if it moved.
        """
        assert self.embedder is not None, "no texts were embedded"
        if not self.checked:
            serving = _serving_under_lock(self.workspace, self.embedder)
            if serving is not self.embedder:
                self.embedder, self.vectors = serving, [serving.encode_one(t) for t in self.texts]
            self.checked = True
        return self.embedder, self.vectors


@contextlib.contextmanager
def embedded_and_locked(*, workspace: Workspace, texts: Sequence[str]) -> Iterator[Embedded]:
    """Embed `texts` (none: no embedder is looked up), then hold a transaction
    with the workspace lock: the sequence of every write of new text but remember's."""
    embedder = selectors.embedder_for(workspace) if texts else None
    vectors = [embedder.encode_one(t) for t in texts] if embedder is not None else []
    with transaction.atomic():
        _workspace_lock(workspace)
        yield Embedded(workspace=workspace, texts=list(texts), embedder=embedder, vectors=vectors)
