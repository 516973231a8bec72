"""State keys: the current value and the chain of earlier ones."""

from __future__ import annotations

from django.db.models import QuerySet

from contexts.errors import NotFound
from contexts.models import Workspace
from memories.models import Memory


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
        Memory.objects.filter(workspace=workspace, state_key=key, forgotten_at__isnull=True)
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
