"""The session pack a new session starts with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from contexts.models import Workspace
from memories.models import Memory
from memories.selectors.entries import unexpired, visible_to

# Entries in a restore trail.
TRAIL = 15


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
    project_root: str = "",
) -> SessionPack:
    """Recent activity in `workspace`; with `project_root`, the trail of sessions
    opened in that project comes first, the rest of the workspace fills it up."""
    now = now or timezone.now()
    since = now - timedelta(minutes=minutes)
    readable = Memory.objects.filter(unexpired(), visible_to(viewer_id), workspace=workspace)
    recent = readable.filter(valid_to__isnull=True, created_at__gte=since).exclude(
        compartment="lessons"
    )
    trail: list[Memory] = []
    if project_root:
        root = project_root.rstrip("/") or "/"
        here = Q(session__cwd=root) | Q(session__cwd__startswith=f"{root.rstrip('/')}/")
        trail = list(recent.filter(here).order_by("-created_at", "-id")[:TRAIL])
    trail += recent.exclude(pk__in=[m.pk for m in trail]).order_by("-created_at", "-id")[
        : TRAIL - len(trail)
    ]
    trail.sort(key=lambda m: (m.created_at, m.pk))  # oldest first: a trail reads forward
    conclusions = list(
        readable.filter(
            valid_to__isnull=True,
            source__in=[Memory.Source.MODEL, Memory.Source.CONSOLIDATION],
        )
        .exclude(pk__in=[m.pk for m in trail])
        .order_by("-created_at", "-id")[:5]
    )
    return SessionPack(trail=trail, conclusions=conclusions)
