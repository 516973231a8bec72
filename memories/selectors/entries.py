"""Single entries and filtered lists of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from contexts.errors import NotFound
from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memories.models import Memory


def unexpired() -> Q:
    """An archive entry past its expiry is gone for readers at once, not when the daily
    cleanup deletes it: every read path filters on this."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())


def visible_to(viewer_id: int | None) -> Q:
    """Public entries, and the private ones `viewer_id` wrote. No viewer sees no
    private entry at all: a read path that forgets to name its reader fails closed."""
    if viewer_id is None:
        return Q(private=False)
    return Q(private=False) | Q(user_id=viewer_id)


def visible_sql(viewer_id: int | None, params: dict[str, Any], alias: str = "m") -> str:
    """`visible_to` as a SQL condition, for the raw statements (recall's arms, insights)."""
    if viewer_id is None:
        return f"NOT {alias}.private"
    params["f_viewer"] = viewer_id
    return f"(NOT {alias}.private OR {alias}.user_id = %(f_viewer)s)"


def hidden_from(*, workspace: Workspace, viewer_id: int | None) -> QuerySet[Memory, Any]:
    """The ids (`values("pk")`) of the workspace's private entries `viewer_id` did not
    write: what counts and ledger ids leave out, so that others never learn they exist."""
    hidden = Memory.objects.filter(workspace=workspace, private=True)
    if viewer_id is not None:
        hidden = hidden.exclude(user_id=viewer_id)
    return hidden.values("pk")


# `hidden_from` for the raw statements (the dashboard's ledger); binds `ws` and `viewer`.
HIDDEN_IDS_SQL = """
    SELECT id FROM memories_memory
    WHERE workspace_id = %(ws)s AND private AND user_id IS DISTINCT FROM %(viewer)s
"""


def is_visible(memory: Memory, viewer_id: int | None) -> bool:
    return not memory.private or (viewer_id is not None and memory.user_id == viewer_id)


def memory_get(
    *,
    workspace: Workspace,
    memory_id: int,
    forgotten: bool = False,
    viewer_id: int | None = None,
) -> Memory:
    """One entry of the workspace, unless it is missing or expired (both 404, with
    distinct codes). A forgotten one only with `forgotten` (its own page, restore,
    purge): to every other reader it no longer exists. Someone else's private
    entry does not exist either (the same 404: its id leaks nothing)."""
    memory = Memory.objects.filter(workspace=workspace, pk=memory_id).first()
    if (
        memory is None
        or (memory.forgotten_at is not None and not forgotten)
        or not is_visible(memory, viewer_id)
    ):
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
    # Whose private entries may appear (see visible_to); None: nobody's.
    viewer_id: int | None = None
    contains: str | None = None  # a case-insensitive substring of the text
    # Only this project's entries and the whole workspace's (selectors.projects).
    project: str | None = None
    # What was current at this time, by the validity intervals: written by then,
    # not yet superseded, merged or expired then (a merge's tombstone answers for
    # the text before the merge). Forgotten entries stay out: forgetting is the
    # person's word. Takes the place of "current" and of `include_superseded`.
    as_of: datetime | None = None

    def sql(self, params: dict[str, Any], alias: str = "m") -> str:
        """A WHERE fragment (starting with AND) for these filters."""
        # The clock, not now(): that is the transaction's start, stale in a long one.
        params["f_now"] = timezone.now()
        # Forgotten entries (tombstones) never take part, superseded ones on request.
        if self.as_of is not None:
            params["f_now"] = self.as_of
        parts = [
            f"({alias}.expires_at IS NULL OR {alias}.expires_at > %(f_now)s)",
            f"{alias}.forgotten_at IS NULL",
            visible_sql(self.viewer_id, params, alias),
        ]
        if self.as_of is not None:
            parts.append(
                f"{alias}.created_at <= %(f_now)s AND {alias}.valid_from <= %(f_now)s"
                f" AND ({alias}.valid_to IS NULL OR {alias}.valid_to > %(f_now)s)"
            )
        elif not self.include_superseded:
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
        if self.project is not None:
            params["f_project"] = self.project
            parts.append(f"{alias}.project IN (%(f_project)s, '')")
        if self.since is not None:
            params["f_since"] = self.since
            parts.append(f"{alias}.created_at >= %(f_since)s")
        if self.until is not None:
            params["f_until"] = self.until
            parts.append(f"{alias}.created_at < %(f_until)s")
        return "".join(f" AND {p}" for p in parts)

    def queryset(self, qs: QuerySet[Memory]) -> QuerySet[Memory]:
        qs = qs.filter(visible_to(self.viewer_id), forgotten_at__isnull=True)
        if self.as_of is not None:
            qs = qs.filter(
                Q(expires_at__isnull=True) | Q(expires_at__gt=self.as_of),
                Q(valid_to__isnull=True) | Q(valid_to__gt=self.as_of),
                created_at__lte=self.as_of,
                valid_from__lte=self.as_of,
            )
        else:
            qs = qs.filter(unexpired())
        if self.as_of is None and not self.include_superseded:
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
        if self.project is not None:
            qs = qs.filter(project__in=[self.project, ""])
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


def memory_forgotten_list(
    *, workspace: Workspace, viewer_id: int | None = None
) -> QuerySet[Memory]:
    """The workspace's tombstones `viewer_id` may see, most recently forgotten first.

    Uses index: memory_forgotten_idx.
    """
    return Memory.objects.filter(
        visible_to(viewer_id), workspace=workspace, forgotten_at__isnull=False
    ).order_by("-forgotten_at", "-id")


def private_audit_targets(workspace: Workspace, targets: set[str], viewer: Any) -> set[str]:
    """Of the audit targets ("memory:42"), those naming an entry private to someone
    other than `viewer`: their audit rows keep its texts (contexts.tenancy.audit guard)."""
    ids = {int(t[7:]) for t in targets if t.startswith("memory:") and t[7:].isdigit()}
    if not ids:
        return set()
    hidden = Memory.objects.filter(workspace=workspace, pk__in=ids, private=True).exclude(
        visible_to(getattr(viewer, "pk", None))
    )
    return {f"memory:{pk}" for pk in hidden.values_list("pk", flat=True)}
