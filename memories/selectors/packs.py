"""The session pack a new session starts with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from contexts.models import Workspace
from memories.models import Memory
from memories.selectors.entries import unexpired, visible_to
from memories.selectors.prompts import BLOCK_PROMPT_SHARE, is_prompt_memory

# Entries a restore pack's trail holds at most.
TRAIL_SIZE = 15

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


def trail_capped(recent: list[Memory]) -> list[Memory]:
    """At most TRAIL_SIZE of `recent` (newest first), the newest, with earlier questions
    (captured prompts) at most a third of them, as in a recall block
    (rendering.recall_block): a trail of fifteen questions tells a new session what
    was asked, not what is known. The questions left out stay recallable.
    """
    others = [m for m in recent if not is_prompt_memory(m)]
    questions = [m for m in recent if is_prompt_memory(m)]
    kept_others = min(len(others), TRAIL_SIZE)
    kept_questions = min(len(questions), kept_others // (BLOCK_PROMPT_SHARE - 1))
    while kept_others + kept_questions > TRAIL_SIZE:
        kept_others -= 1
        kept_questions = min(len(questions), kept_others // (BLOCK_PROMPT_SHARE - 1))
    kept = {m.pk for m in others[:kept_others]} | {m.pk for m in questions[:kept_questions]}
    return [m for m in recent if m.pk in kept]


def session_pack(
    *,
    workspace: Workspace,
    minutes: int = 180,
    now: datetime | None = None,
    viewer_id: int | None = None,
    project: str | None = None,
) -> SessionPack:
    """Recent activity and the latest conclusions; with `project`, only that project's
    and the whole workspace's (a new session in one project is not told another's)."""
    now = now or timezone.now()
    since = now - timedelta(minutes=minutes)
    readable = Memory.objects.filter(unexpired(), visible_to(viewer_id), workspace=workspace)
    if project:
        readable = readable.filter(project__in=[project, ""])
    recent = list(
        readable.filter(valid_to__isnull=True, created_at__gte=since)
        .exclude(compartment="lessons")
        .order_by("-created_at", "-id")[: TRAIL_SIZE * BLOCK_PROMPT_SHARE]
    )
    trail = trail_capped(recent)
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
