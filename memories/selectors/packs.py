"""The session pack a new session starts with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from contexts.models import Workspace
from memories.models import Memory
from memories.selectors.entries import unexpired, visible_to


@dataclass
class SessionPack:
    trail: list[Memory]
    conclusions: list[Memory]


def cut_at_sentence(text: str, limit: int) -> str:
    """At most `limit` characters, ending at a sentence end when one is near."""
    if len(text) <= limit:
        return text
    window = text[:limit]
    ends = [window.rfind(mark) for mark in (". ", "\u3002", "! ", "? ", "\uff01", "\uff1f", "\n")]
    cut = max(ends)
    if cut >= limit // 2:
        return window[: cut + 1].rstrip()
    return window.rstrip() + "…"


def session_pack(
    *,
    workspace: Workspace,
    minutes: int = 180,
    now: datetime | None = None,
    viewer_id: int | None = None,
) -> SessionPack:
    now = now or timezone.now()
    since = now - timedelta(minutes=minutes)
    readable = Memory.objects.filter(unexpired(), visible_to(viewer_id), workspace=workspace)
    trail = list(
        readable.filter(valid_to__isnull=True, created_at__gte=since)
        .exclude(compartment="lessons")
        .order_by("-created_at", "-id")[:15]
    )
    trail.reverse()  # oldest first: a trail reads forward
    conclusions = list(
        readable.filter(
            valid_to__isnull=True,
            source__in=[Memory.Source.MODEL, Memory.Source.CONSOLIDATION],
        )
        .exclude(pk__in=[m.pk for m in trail])
        .order_by("-created_at", "-id")[:5]
    )
    return SessionPack(trail=trail, conclusions=conclusions)
