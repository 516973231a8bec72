"""Reads the dashboard needs beyond `contexts.tenancy.selectors`: sessions, their
summary trees and refs, counts, growth, and a side-effect-free assembly preview.

Everything here is scoped by a workspace the caller already checked (the
views call `contexts.dashboard.common.workspace_for_page` first).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Length, TruncDate
from django.utils import timezone

from contexts.declarations import (
    ENV_PREFIX,
    Assembly,
    ConfigError,
    ContextConfig,
    DeclarationError,
    assemble,
    normalize_path,
)
from contexts.errors import Invalid, NotFound
from contexts.models import (
    AgentSession,
    CompressionRef,
    ContextDocument,
    Declaration,
    SessionEvent,
    SummaryNode,
    Workspace,
)
from contexts.tenancy.selectors import context_config_for, context_source_for

# --- sessions ---------------------------------------------------------------------------


def session_list_annotated(
    *,
    workspace: Workspace,
    contains: str = "",
    app: str = "",
    state: str = "",
    directory: str = "",
    since: datetime | None = None,
) -> QuerySet[AgentSession]:
    """A workspace's sessions, newest first, each with its event and injection counts.

    `contains` matches the harness's session id or the directory; `state` is
    "open" or "ended" (anything else: both); `directory` keeps the sessions
    opened in it or below it; `since`, those started at or after it.

    The counts are correlated subqueries rather than a join + GROUP BY, so a
    page of 50 sessions costs 50 index probes, not an aggregate over every event.
    """
    events = (
        SessionEvent.objects.filter(session=OuterRef("pk"))
        .order_by()
        .values("session")
        .annotate(n=Count("id"))
        .values("n")
    )
    injections = events.filter(kind="injection")
    sessions = AgentSession.objects.filter(workspace=workspace)
    if contains:
        sessions = sessions.filter(Q(external_id__icontains=contains) | Q(cwd__icontains=contains))
    if app:
        sessions = sessions.filter(app=app)
    if state in ("open", "ended"):
        sessions = sessions.filter(ended_at__isnull=state == "open")
    if directory:
        root = directory.rstrip("/") or "/"
        below = root if root.endswith("/") else root + "/"
        sessions = sessions.filter(Q(cwd=root) | Q(cwd__startswith=below))
    if since is not None:
        sessions = sessions.filter(started_at__gte=since)
    # Uses index: agentsession_recent_idx.
    return (
        sessions.select_related("user")
        .annotate(
            n_events=Coalesce(Subquery(events, output_field=IntegerField()), 0),
            n_injections=Coalesce(Subquery(injections, output_field=IntegerField()), 0),
        )
        .order_by("-started_at", "-id")
    )


def session_apps(*, workspace: Workspace) -> list[str]:
    """The harnesses that reported sessions here, for the list's filter."""
    return list(
        AgentSession.objects.filter(workspace=workspace)
        .exclude(app="")
        .order_by("app")
        .values_list("app", flat=True)
        .distinct()[:100]
    )


def session_get(*, workspace: Workspace, session_id: int) -> AgentSession:
    session = (
        AgentSession.objects.filter(workspace=workspace, pk=session_id)
        .select_related("user")
        .first()
    )
    if session is None:
        raise NotFound(f"No session {session_id} in this workspace.", code="session_not_found")
    session.workspace = workspace
    return session


def session_events(*, session: AgentSession) -> QuerySet[SessionEvent]:
    """The session's event log in the order it happened."""
    # Uses index: sessionevent_kind_idx (session prefix).
    return SessionEvent.objects.filter(session=session).order_by("at", "id")


def session_compression_refs(*, session: AgentSession) -> list[CompressionRef]:
    """The originals stored from this session's tool results, oldest first, without content."""
    return list(
        CompressionRef.objects.filter(workspace_id=session.workspace_id, session=session)
        .defer("content")
        .order_by("created_at", "id")
    )


@dataclass
class TreeNode:
    node: SummaryNode
    children: list[TreeNode] = field(default_factory=list)


def summary_tree(*, session: AgentSession) -> list[TreeNode]:
    """The session's summary DAG as a forest: roots are the active nodes, in turn order.

    A condensed node's children are the nodes it folded (`parent` points up).
    """
    nodes = list(SummaryNode.objects.filter(session=session).order_by("start_turn", "-depth"))
    by_id = {n.pk: TreeNode(node=n) for n in nodes}
    roots: list[TreeNode] = []
    for n in nodes:
        parent = by_id.get(n.parent_id) if n.parent_id else None
        (parent.children if parent else roots).append(by_id[n.pk])
    return roots


# --- the compression page ---------------------------------------------------------------

PREVIEW_BYTES = 256 * 1024


def compression_ref_get(*, workspace: Workspace, sha256: str) -> CompressionRef:
    """A ref by its full hash, expired or not (the dashboard shows the expiry)."""
    wanted = sha256.strip().lower()
    # Uses index: compressionref_unique.
    ref = CompressionRef.objects.filter(workspace=workspace, sha256=wanted).first()
    if ref is None:
        raise NotFound(f"No stored original with hash {wanted[:64]}.", code="not_found")
    return ref


@dataclass(frozen=True)
class OriginalView:
    text: str  # what the page shows: the decoded text, or a hex dump
    is_text: bool
    shown_bytes: int
    total_bytes: int
    expired: bool

    @property
    def truncated(self) -> bool:
        return self.shown_bytes < self.total_bytes


def compression_original_view(
    *, ref: CompressionRef, now: datetime | None = None, limit: int = PREVIEW_BYTES
) -> OriginalView:
    """The original as readable text: UTF-8 when it decodes, otherwise a hex dump."""
    now = now or timezone.now()
    content = bytes(ref.content)
    head = content[:limit]
    try:
        text = head.decode("utf-8")
        is_text = True
    except UnicodeDecodeError as exc:
        if len(head) == limit and exc.start >= limit - 3:  # a character cut at the limit
            text, is_text = head[: exc.start].decode("utf-8"), True
        else:
            head = head[:4096]
            text = "\n".join(
                f"{i:08x}  {head[i : i + 16].hex(' ')}" for i in range(0, len(head), 16)
            )
            is_text = False
    return OriginalView(
        text=text,
        is_text=is_text,
        shown_bytes=len(head),
        total_bytes=len(content),
        expired=bool(not ref.pinned and ref.expires_at and ref.expires_at <= now),
    )


# --- counts and growth ----------------------------------------------------------------


def workspace_counts(*, workspace: Workspace) -> dict[str, int]:
    return {
        "sessions": AgentSession.objects.filter(workspace=workspace).count(),
        "declarations": Declaration.objects.filter(workspace=workspace).count(),
        "documents": ContextDocument.objects.filter(workspace=workspace).count(),
        "compression_refs": CompressionRef.objects.filter(workspace=workspace).count(),
    }


def session_daily_counts(*, workspace: Workspace, since: datetime) -> dict[date, int]:
    rows = (
        AgentSession.objects.filter(workspace=workspace, started_at__gte=since)
        .annotate(day=TruncDate("started_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    )
    return {row["day"]: row["n"] for row in rows}


# --- declarations and the assembly preview ----------------------------------------------


def context_document_sizes(*, workspace: Workspace) -> QuerySet[ContextDocument]:
    """Documents without their content, in path order, each with its length in characters."""
    return (
        ContextDocument.objects.filter(workspace=workspace)
        .defer("content")
        .annotate(chars=Length("content"))
        .order_by("path")
    )


@dataclass(frozen=True)
class AssemblyPreview:
    assembly: Assembly | None
    error: str = ""
    config_warning: str = ""


def context_assembly_preview(
    *,
    workspace: Workspace,
    directory: str,
    device: str | None = None,
    hostname: str | None = None,
    env: Mapping[str, str] | None = None,
) -> AssemblyPreview:
    """What a session opened in `directory` would be given, recording nothing.

    The same resolver and stored sources as `contexts.tenancy.services.context_assemble`
    (the REST `contexts/assemble/`), minus the session event it writes.
    """
    if not directory.startswith("/"):
        raise Invalid("The directory must be an absolute path.", code="invalid_path")
    for name in env or {}:
        if not name.startswith(ENV_PREFIX):
            raise Invalid(
                f"Only {ENV_PREFIX}* variables are accepted, not {name!r}.", code="invalid_env"
            )
    warning = ""
    try:
        config = context_config_for(workspace=workspace)
    except ConfigError as exc:
        config = ContextConfig()
        warning = f"The workspace's context options are unusable ({exc}); defaults apply."
    try:
        assembly = assemble(
            source=context_source_for(workspace=workspace, config=config),
            directory=normalize_path(directory),
            config=config,
            env=dict(env or {}),
            device=device or None,
            hostname=hostname or None,
        )
    except (DeclarationError, ValueError) as exc:
        return AssemblyPreview(assembly=None, error=str(exc), config_warning=warning)
    if warning:
        assembly = dataclasses.replace(assembly, warnings=(warning, *assembly.warnings))
    return AssemblyPreview(assembly=assembly, config_warning=warning)


def recent_days(*, days: int, now: datetime | None = None) -> tuple[date, datetime]:
    """(today, the start of the first day) of a window of `days` days ending today (UTC)."""
    now = now or timezone.now()
    today = now.date()
    start = datetime.combine(today - timedelta(days=days - 1), datetime.min.time(), now.tzinfo)
    return today, start
