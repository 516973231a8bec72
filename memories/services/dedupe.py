"""Dedupe: whether an incoming text is new, a repeat or an extension, and
undoing a fold."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import connection
from django.db.models import F
from django.utils import timezone

from contexts.errors import Conflict
from contexts.models import AgentSession, Workspace
from memories import lexical, selectors
from memories.conf import DEDUPE_MIN_CONTAINED_SHARE, merge_cosine
from memories.embeddings import get_embedder
from memories.models import DedupeEvent, Memory
from memories.services.inputs import RememberInput, RememberResult
from memories.services.writes import _lock_key, _set_text, _update_term_stats, embedded_and_locked

if TYPE_CHECKING:
    from django.contrib.auth.models import User


# A merge never makes an entry's source weaker than it was.
SOURCE_RANK = {"hook": 0, "session": 0.5, "import": 1, "consolidation": 2, "model": 3}
DEDUPE_NEIGHBOURS = 5


# Punctuation at a word's edges, not inside it: `python3-foo:` stays one word.
_EDGE_PUNCTUATION = re.compile(r"^[^\w]+|[^\w]+$")


_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def containment_form(text: str) -> str:
    """The words of `text` for containment: case and width folded, edge punctuation dropped.

    Unlike `lexical.normalize`, a word joined by `-`, `.`, `/` or `_` stays
    whole, so `foo: a library` is not inside `python3-foo: a library`: an
    entry whose text sits in another's only once a joined name is split is
    about another thing.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # CJK is written without spaces: each character is a word of its own here.
    folded = _CJK.sub(r" \g<0> ", folded)
    words = (_EDGE_PUNCTUATION.sub("", w) for w in folded.split())
    return " ".join(w for w in words if w)


@dataclass
class _Pending:
    item: RememberInput
    vector: np.ndarray
    words: str  # containment_form of the text
    norm_hash: str

    @classmethod
    def of(cls, item: RememberInput, vector: np.ndarray) -> _Pending:
        return cls(
            item=item,
            vector=vector,
            words=containment_form(item.text),
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
    return _insert_row(
        workspace=workspace,
        item=item,
        vector=vector,
        model_id=model_id,
        user=user,
        session=session,
        **extra,
    )


def _insert_row(
    *,
    workspace: Workspace,
    item: RememberInput,
    vector: np.ndarray,
    model_id: str,
    user: User | None = None,
    session: AgentSession | None = None,
    **extra: Any,
) -> Memory:
    """`_insert_unfolded` with a vector the caller checked under the lock (`Embedded.serving`)."""
    folder = _Folder(workspace=workspace, user=user, session=session, model_id=model_id)
    memory = folder._new_row(_Pending.of(item, vector), **extra)
    folder._insert([memory])
    return memory


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
        """The repeats by hash, and the nearest entries by vector: stored or of this batch.

        The same `DEDUPE_NEIGHBOURS` nearest whether the earlier texts came in
        this batch or one by one, so a batch and the same texts sent singly
        take the same decisions.
        """
        near: dict[int, tuple[Memory, float]] = {}
        for memory, cosine in neighbours:
            near.setdefault(id(memory), (memory, cosine))
        for other, memory in batch_rows:
            cosine = float(np.dot(other.vector, p.vector))
            near.setdefault(id(memory), (memory, cosine))
        nearest = sorted(near.values(), key=lambda mc: -mc[1])[:DEDUPE_NEIGHBOURS]
        seen = {id(m): (m, 1.0) for m in exact.get(p.norm_hash, [])}
        for memory, cosine in nearest:
            seen.setdefault(id(memory), (memory, cosine))
        return [
            (m, c)
            for m, c in seen.values()
            if m.valid_to is None
            and m.compartment == p.item.compartment
            and not m.state_key
            and self._same_visibility(m, p)
        ]

    def _same_visibility(self, memory: Memory, p: _Pending) -> bool:
        """A public text never folds into someone's private entry (it would vanish for
        everyone else), nor a private one into a public entry or another author's."""
        if memory.private != p.item.private:
            return False
        return not memory.private or memory.user_id == (self.user.pk if self.user else None)

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
            existing = containment_form(memory.text)
            shorter, longer = sorted((existing, p.words), key=len)
            if len(shorter) < 12 or len(shorter) < DEDUPE_MIN_CONTAINED_SHARE * len(longer):
                continue  # too small a part for containment to mean "the same fact"
            # Whole words only: "foo bar" is not inside "libfoo bar".
            if f" {existing} " in f" {p.words} ":
                best = (memory, cosine, "merge")
                break
            if f" {p.words} " in f" {existing} ":
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
            # Said in a session: kept with its project, unless the item names one.
            "project": (
                p.item.project
                if p.item.project is not None
                else (self.session.project if self.session is not None else "")
            ),
            "metadata": p.item.metadata,
            "private": p.item.private,
            "expires_at": p.item.expires_at,
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

    def _take_source(self, memory: Memory, p: _Pending) -> None:
        """The stronger source; when the incoming text's wins, its metadata comes too
        (a session's work taking over its captured prompt keeps its provenance)."""
        source = self._stronger_source(memory, p)
        if source != memory.source and source == p.item.source and p.item.metadata:
            memory.metadata = {**(memory.metadata or {}), **p.item.metadata}
        memory.source = source

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
            self._take_source(memory, p)
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
        self._take_source(memory, p)
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


def dedupe_undo(*, workspace: Workspace, event: DedupeEvent, user: User | None = None) -> Memory:
    """Reverse a strengthen or merge: the incoming text becomes its own entry."""
    if event.undone_at is not None:
        raise Conflict("This fold was undone already.", code="already_undone")
    texts = [event.incoming_text, *([event.previous_text] if event.previous_text else [])]
    with embedded_and_locked(workspace=workspace, texts=texts) as new:
        embedder, vectors = new.serving()
        incoming_vector = vectors[0]
        previous_vector = vectors[1] if event.previous_text else None
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
        restored = _insert_row(
            workspace=workspace,
            item=item,
            vector=incoming_vector,
            model_id=embedder.model_id,
            user=user,
        )
        event.undone_at = timezone.now()
        event.save(update_fields=["undone_at"])
    return restored
