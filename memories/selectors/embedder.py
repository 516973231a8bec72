"""The workspace's embedder: the one serving, the one requested, a re-embed's progress."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memflow_site.runtime.db import bound_rows
from memories import embeddings
from memories.embeddings import Embedder
from memories.models import Memory, WorkspaceEmbedder


def serving_backend(*, workspace: Workspace) -> str:
    """The backend whose vectors are in `Memory.embedding` for this workspace."""
    # Raw SQL (memflow_site.runtime.db): every hook and every write asks, some twice.
    found = bound_rows(_SERVING_SQL, {"ws": workspace.pk})
    return str(found[0][0]) if found else embeddings.DEFAULT_BACKEND


_SERVING_SQL = f"SELECT backend FROM {WorkspaceEmbedder._meta.db_table} WHERE workspace_id = %(ws)s"


def embedder_for(workspace: Workspace) -> Embedder:
    """The embedder every path uses for this workspace: what recall searches, what is stored.

    During a re-embed this stays the old one until the new vectors are all
    in place (`services.workspace_embedder_set`).
    """
    return embeddings.get_embedder(serving_backend(workspace=workspace))


def embedder_now(workspace: Workspace) -> Embedder | None:
    """`embedder_for`, or None while its model is still loading (never waits for that)."""
    return embeddings.embedder_now(serving_backend(workspace=workspace))


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
        requested=str(knob(workspace, "embedder")),
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
