"""Forget every entry a filter matches: the list's filters, then one tombstone each.

Each entry gets its own `memory.forget` audit row (its history answers "who
removed #N"); the rows of one run share a `bulk` id and the filter that
matched, so the run reads back as one act too. Restore stays per entry.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from contexts.errors import Invalid
from contexts.models import Workspace
from contexts.tenancy.audit import Actor
from memories.models import Memory
from memories.selectors.entries import MemoryFilters, memory_list
from memories.services.forget import _tombstone
from memories.services.writes import _workspace_lock

# One call forgets at most this many (oldest first); `remaining` says what is left.
BULK_FORGET_MAX = 1000
SAMPLE_SIZE = 10


@dataclass(frozen=True)
class ForgetFilter:
    filters: MemoryFilters
    contains: str | None = None
    tags: tuple[str, ...] = ()
    session_id: int | None = None  # an AgentSession pk
    described: dict[str, Any] = field(default_factory=dict)  # as the caller gave it

    def is_empty(self) -> bool:
        f = self.filters
        narrowed = (
            f.compartment,
            f.compartments,
            f.source,
            f.app,
            f.state_key,
            f.since,
            f.until,
            self.contains,
            self.session_id,
        )
        return not self.tags and all(v is None or v == "" for v in narrowed)

    def queryset(self, workspace: Workspace, viewer_id: int | None) -> QuerySet[Memory]:
        filters = dataclasses.replace(
            self.filters, viewer_id=viewer_id, contains=self.contains or None
        )
        qs = memory_list(workspace=workspace, filters=filters)
        for tag in self.tags:
            qs = qs.filter(metadata__tags__contains=[tag])
        if self.session_id is not None:
            qs = qs.filter(session_id=self.session_id)
        return qs


@dataclass
class BulkForgetResult:
    matched: int
    forgotten: list[int]
    sample: list[Memory]
    dry_run: bool
    bulk_id: str = ""

    @property
    def remaining(self) -> int:
        return max(0, self.matched - len(self.forgotten))


def memory_forget_matching(
    *,
    workspace: Workspace,
    match: ForgetFilter,
    actor: Actor,
    reason: str = "",
    dry_run: bool = False,
) -> BulkForgetResult:
    """Forget what `match` selects among the entries the actor can see.

    An empty filter is refused: "forget everything" is a different request
    (delete the workspace). `dry_run` counts and samples, changing nothing.
    """
    if match.is_empty():
        raise Invalid(
            "Say which memories to forget: an empty filter would match them all.",
            code="empty_filter",
        )
    # Someone else's private entries are not there to match: the actor cannot see them.
    qs = match.queryset(workspace, actor.user.pk if actor.user else None)
    matched = qs.count()
    if dry_run:
        sample = list(qs.select_related("session", "workspace")[:SAMPLE_SIZE])
        return BulkForgetResult(matched=matched, forgotten=[], sample=sample, dry_run=True)
    bulk_id = uuid.uuid4().hex[:12]
    detail = {"bulk": bulk_id, "filter": match.described}
    forgotten: list[int] = []
    with transaction.atomic():
        _workspace_lock(workspace)
        ids = list(qs.order_by("created_at", "id").values_list("pk", flat=True)[:BULK_FORGET_MAX])
        for locked in Memory.objects.select_for_update().filter(pk__in=ids).order_by("id"):
            if locked.forgotten_at is not None:
                continue
            _tombstone(workspace=workspace, locked=locked, actor=actor, reason=reason, extra=detail)
            forgotten.append(locked.pk)
    return BulkForgetResult(
        matched=matched, forgotten=forgotten, sample=[], dry_run=False, bulk_id=bulk_id
    )
