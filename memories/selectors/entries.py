"""Single entries and filtered lists of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from contexts.errors import NotFound
from contexts.knobs import knob
from contexts.models import Workspace
from memories.models import Memory


def unexpired() -> Q:
    """An archive entry past its expiry is gone for readers at once, not when the daily
    cleanup deletes it: every read path filters on this."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())


def memory_get(*, workspace: Workspace, memory_id: int, forgotten: bool = False) -> Memory:
    """One entry of the workspace, unless it is missing or expired (both 404, with
    distinct codes). A forgotten one only with `forgotten` (its own page, restore,
    purge): to every other reader it no longer exists."""
    memory = Memory.objects.filter(workspace=workspace, pk=memory_id).first()
    if memory is None or (memory.forgotten_at is not None and not forgotten):
        raise NotFound(f"No memory #{memory_id} in this workspace.", code="memory_not_found")
    if memory.expires_at is not None and memory.expires_at <= timezone.now():
        raise NotFound(
            f"Memory #{memory_id} expired on {memory.expires_at:%Y-%m-%d %H:%M} UTC.",
            code="memory_expired",
        )
    return memory


@dataclass(frozen=True)
class MemoryFilters:
    compartment: str | None = None
    compartments: Sequence[str] | None = None
    source: str | None = None
    app: str | None = None
    state_key: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False
    exclude_compartments: Sequence[str] = ()
    contains: str | None = None  # a case-insensitive substring of the text

    def sql(self, params: dict[str, Any], alias: str = "m") -> str:
        """A WHERE fragment (starting with AND) for these filters."""
        # The clock, not now(): that is the transaction's start, stale in a long one.
        params["f_now"] = timezone.now()
        # Forgotten entries (tombstones) never take part, superseded ones on request.
        parts = [
            f"({alias}.expires_at IS NULL OR {alias}.expires_at > %(f_now)s)",
            f"{alias}.forgotten_at IS NULL",
        ]
        if not self.include_superseded:
            parts.append(f"{alias}.valid_to IS NULL")
        if self.compartment is not None:
            params["f_compartment"] = self.compartment
            parts.append(f"{alias}.compartment = %(f_compartment)s")
        if self.compartments is not None:
            params["f_compartments"] = list(self.compartments)
            parts.append(f"{alias}.compartment = ANY(%(f_compartments)s)")
        if self.exclude_compartments:
            params["f_exclude"] = list(self.exclude_compartments)
            parts.append(f"NOT ({alias}.compartment = ANY(%(f_exclude)s))")
        for name in ("source", "app", "state_key"):
            value = getattr(self, name)
            if value is not None:
                params[f"f_{name}"] = value
                parts.append(f"{alias}.{name} = %(f_{name})s")
        if self.contains:
            # Uses index: memory_text_trgm. Escaped as Django escapes icontains.
            params["f_contains"] = "%" + _like_escaped(self.contains) + "%"
            parts.append(f"{alias}.text ILIKE %(f_contains)s")
        if self.since is not None:
            params["f_since"] = self.since
            parts.append(f"{alias}.created_at >= %(f_since)s")
        if self.until is not None:
            params["f_until"] = self.until
            parts.append(f"{alias}.created_at < %(f_until)s")
        return "".join(f" AND {p}" for p in parts)

    def queryset(self, qs: QuerySet[Memory]) -> QuerySet[Memory]:
        qs = qs.filter(unexpired(), forgotten_at__isnull=True)
        if not self.include_superseded:
            qs = qs.filter(valid_to__isnull=True)
        if self.compartment is not None:
            qs = qs.filter(compartment=self.compartment)
        if self.compartments is not None:
            qs = qs.filter(compartment__in=list(self.compartments))
        if self.exclude_compartments:
            qs = qs.exclude(compartment__in=list(self.exclude_compartments))
        for name in ("source", "app", "state_key"):
            value = getattr(self, name)
            if value is not None:
                qs = qs.filter(**{name: value})
        if self.contains:
            # Uses index: memory_text_trgm (substring search over paths, IDs, CJK).
            qs = qs.filter(text__icontains=self.contains)
        if self.since is not None:
            qs = qs.filter(created_at__gte=self.since)
        if self.until is not None:
            qs = qs.filter(created_at__lt=self.until)
        return qs


def _like_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def memory_list(*, workspace: Workspace, filters: MemoryFilters) -> QuerySet[Memory]:
    qs = filters.queryset(Memory.objects.filter(workspace=workspace))
    return qs.order_by("-created_at", "-id")


def memory_purge_due(*, memory: Memory) -> datetime | None:
    """When the daily cleanup will purge this tombstone (None: not forgotten)."""
    if memory.forgotten_at is None:
        return None
    days = float(knob(memory.workspace, "forget_retention_days"))
    return memory.forgotten_at + timedelta(days=days)


def memory_forgotten_list(*, workspace: Workspace) -> QuerySet[Memory]:
    """The workspace's tombstones, most recently forgotten first.

    Uses index: memory_forgotten_idx.
    """
    return Memory.objects.filter(workspace=workspace, forgotten_at__isnull=False).order_by(
        "-forgotten_at", "-id"
    )
