"""Remember: one text, a batch, or a long stream of them."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from django.db import transaction
from django.utils import timezone

from contexts.models import AgentSession, Workspace
from memories import selectors
from memories.embeddings import DEFAULT_BACKEND, get_embedder
from memories.services.dedupe import _Folder, _Pending
from memories.services.index import bulk_index_writes
from memories.services.inputs import RememberInput, RememberResult, memory_validate
from memories.services.quota import memory_quota_check
from memories.services.usage import _rehearse_rows
from memories.services.writes import _workspace_lock

if TYPE_CHECKING:
    from django.contrib.auth.models import User


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
    if vectors is None or vectors_model is None:
        embedder = selectors.embedder_for(workspace)
        if vectors is not None and embedder.backend == DEFAULT_BACKEND:
            vectors_model = embedder.model_id  # vectors without a model are the default's
        else:
            vectors, vectors_model = embedder.encode_passages(texts), embedder.model_id
    pending = [_Pending.of(item, v) for item, v in zip(cleaned, vectors, strict=True)]
    with transaction.atomic():
        _workspace_lock(workspace)
        memory_quota_check(workspace=workspace, texts=texts)
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
