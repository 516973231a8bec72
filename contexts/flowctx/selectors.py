"""Reads of flowctx: compression refs by hash, summary nodes, the scratchpad."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db.models import QuerySet, Sum
from django.utils import timezone

from contexts.errors import Invalid, NotFound
from contexts.hooks import inert
from contexts.models import (
    AgentSession,
    CompressionRef,
    Scratchpad,
    SessionEvent,
    SummaryNode,
    Workspace,
)
from contexts.tenancy.knobs import knob
from contexts.tenancy.quotas import Usage
from contexts.tenancy.selectors import agent_session_get

# Long enough that a model quoting a shortened hash still names one original.
MIN_HASH_PREFIX = 12
_HEX = re.compile(r"^[0-9a-f]+$")


def compression_get(
    *, workspace: Workspace, sha256: str, now: datetime | None = None
) -> CompressionRef:
    """The stored original for a hash (or a unique prefix of at least 12 hex digits).

    An expired ref answers `not_found` even before the cleanup deletes it:
    never a wrong body, never a stale promise.
    """
    wanted = sha256.strip().lower()
    if not _HEX.match(wanted) or not MIN_HASH_PREFIX <= len(wanted) <= 64:
        raise Invalid(
            f"A compression hash is 64 hex digits (or a prefix of at least {MIN_HASH_PREFIX}).",
            code="invalid_hash",
        )
    now = now or timezone.now()
    if len(wanted) == 64:
        # Uses index: compressionref_unique.
        candidates = list(CompressionRef.objects.filter(workspace=workspace, sha256=wanted))
    else:
        candidates = list(
            CompressionRef.objects.filter(workspace=workspace, sha256__startswith=wanted)[:2]
        )
    if len(candidates) > 1:
        raise Invalid(f"The prefix {wanted} names more than one original.", code="ambiguous_hash")
    ref = candidates[0] if candidates else None
    if ref is None:
        raise NotFound(f"No stored original with hash {wanted}.", code="not_found")
    if not ref.pinned and ref.expires_at is not None and ref.expires_at <= now:
        raise NotFound(
            f"The original with hash {wanted} expired on {ref.expires_at:%Y-%m-%d}.",
            code="not_found",
        )
    return ref


def session_for(*, workspace: Workspace, session_id: str) -> AgentSession:
    """A session of this workspace by the harness's own id, to read (its notes, its pad)."""
    return agent_session_get(workspace=workspace, external_id=session_id)


def summaries_active(*, session: AgentSession) -> list[SummaryNode]:
    # Uses index: summarynode_active_idx.
    return list(
        SummaryNode.objects.filter(session=session, parent__isnull=True).order_by("start_turn")
    )


def summaries_all(*, session: AgentSession) -> list[SummaryNode]:
    return list(SummaryNode.objects.filter(session=session).order_by("start_turn", "-depth"))


def summary_get(*, session: AgentSession, node_id: str) -> SummaryNode:
    node = SummaryNode.objects.filter(session=session, node_id=node_id).first()
    if node is None:
        raise NotFound(f"No summary node {node_id!r} in this session.", code="node_not_found")
    return node


def scratchpad_get(*, session: AgentSession) -> Scratchpad:
    """The session's scratchpad (an unsaved empty one if never written)."""
    return Scratchpad.objects.filter(session=session).first() or Scratchpad(session=session)


def scratchpad_render(*, session: AgentSession, pad: Scratchpad | None = None) -> str:
    pad = pad or scratchpad_get(session=session)
    limit = int(knob(session.workspace, "scratchpad_max_chars"))
    return (
        f'<working_memory chars_current="{len(pad.text)}" chars_limit="{limit}">\n'
        f"{inert(pad.text)}\n</working_memory>"
    )


def compression_usage(workspace: Workspace, seen_by: int | None = None) -> Usage:
    """The bytes of stored originals, for the workspace's `quota_bytes` (none is private)."""
    size = CompressionRef.objects.filter(workspace=workspace).aggregate(n=Sum("size"))["n"]
    return Usage(stored_bytes=size or 0)


# --- the workspace's stored originals, and what the model was offered for each -------------


def compression_list(*, workspace: Workspace) -> QuerySet[CompressionRef]:
    """The workspace's stored originals, newest first, without their content."""
    return (
        CompressionRef.objects.filter(workspace=workspace)
        .defer("content")
        .select_related("session")
        .order_by("-created_at", "-id")
    )


def projection_recorded(found: Any) -> dict[str, Any] | None:
    """A projection as an injection recorded it (`tool_result`), or None."""
    if not isinstance(found, dict) or not isinstance(found.get("text"), str):
        return None
    return {
        "sha256": str(found.get("sha256", "")),
        "kind": str(found.get("kind", "")),
        "text": found["text"],
        "original_chars": found.get("original_chars"),
        "projected_chars": found.get("projected_chars"),
    }


def session_projections(*, session: AgentSession) -> dict[str, dict[str, Any]]:
    """Per original's hash, the projection this session's model was offered in its place."""
    # Uses index: sessionevent_kind_idx.
    rows = (
        SessionEvent.objects.filter(
            session=session, kind="injection", payload__has_key="tool_result"
        )
        .order_by("at", "id")
        .values_list("payload__tool_result", flat=True)
    )
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        projection = projection_recorded(row)
        if projection is not None:
            found.setdefault(projection["sha256"], projection)
    return found


def compression_projection(*, ref: CompressionRef) -> dict[str, Any] | None:
    """The projection offered for this original in the session that stored it, if recorded."""
    if ref.session_id is None:
        return None
    # Uses index: sessionevent_kind_idx.
    row = (
        SessionEvent.objects.filter(
            session_id=ref.session_id, kind="injection", payload__tool_result__sha256=ref.sha256
        )
        .order_by("at", "id")
        .values_list("payload__tool_result", flat=True)
        .first()
    )
    return projection_recorded(row)
