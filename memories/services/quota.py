"""What memories count against a workspace's quotas (contexts.tenancy.quotas)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Count, F, Func, Sum

from contexts.models import Workspace
from contexts.tenancy.quotas import Usage, quota_check
from memories.models import Memory
from memories.selectors.entries import hidden_from


def memory_usage(workspace: Workspace, seen_by: int | None = None) -> Usage:
    """Stored rows (superseded ones too: they are kept) and the UTF-8 bytes of their text;
    with `seen_by`, less another member's private ones (as that user is shown the quota)."""
    rows = Memory.objects.filter(workspace=workspace)
    if seen_by is not None:
        rows = rows.exclude(pk__in=hidden_from(workspace=workspace, viewer_id=seen_by))
    totals = rows.aggregate(n=Count("pk"), size=Sum(Func(F("text"), function="octet_length")))
    return Usage(memories=totals["n"] or 0, stored_bytes=totals["size"] or 0)


def memory_quota_check(*, workspace: Workspace, texts: Sequence[str]) -> None:
    """Refuse, whole, storing `texts` as new memories past the workspace's quotas."""
    quota_check(
        workspace=workspace,
        memories=len(texts),
        stored_bytes=sum(len(t.encode("utf-8", "surrogatepass")) for t in texts),
    )
