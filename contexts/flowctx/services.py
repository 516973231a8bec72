"""Writes of flowctx: compression refs, the scratchpad, summary folds.

The pure work (projection, handoff notes, the LLM port, fold planning) lives
in the sibling modules; this one stores, locks and enforces the limits.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import cast

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Q, Sum
from django.utils import timezone

from contexts.errors import Invalid, NotFound
from contexts.flowctx import planning
from contexts.flowctx.llm import LlmConfig
from contexts.flowctx.notes import NoteEvent, note_build, note_events
from contexts.flowctx.originals import content_type_clean
from contexts.flowctx.projection import Projection, project
from contexts.models import (
    AgentSession,
    CompressionRef,
    Scratchpad,
    SessionEvent,
    SummaryNode,
    Workspace,
)
from contexts.secrets import find_secret, mask_secrets
from contexts.tenancy.knobs import knob
from contexts.tenancy.quotas import quota_check

logger = logging.getLogger(__name__)

MAX_COMPRESSION_BYTES = 16 * 1024 * 1024
# A content-type parameter marking an original kept only in part, with the
# size in bytes of the whole (e.g. a hook that could not read a cut output).
TRUNCATED_PARAM = "truncated-from"
_TRUNCATED = re.compile(rf";\s*{TRUNCATED_PARAM}=(\d+)\s*(?:;|$)")


def truncated_from(content_type: str) -> int | None:
    """The whole output's size when the stored original is only part of it, else None."""
    found = _TRUNCATED.search(content_type or "")
    return int(found.group(1)) if found else None


# --- reversible projection ----------------------------------------------------------------


@dataclass(frozen=True)
class Compressed:
    ref: CompressionRef
    projection: Projection | None  # None: the original is short enough to show as is
    text: str  # what the model sees: the projection with its marker, or the original

    @property
    def projected(self) -> bool:
        return self.projection is not None


def compression_marker(*, workspace: Workspace, ref: CompressionRef, projection: Projection) -> str:
    """The line that tells the model what was cut and how to get it back.

    No dates or counters that change between calls: the same output projects
    to the same bytes, so a harness's cached prompt prefix survives.
    """
    whole = truncated_from(ref.content_type)
    kept = (
        f"Original ({ref.size:,} bytes), byte for byte"
        if whole is None
        else f"The first {ref.size:,} of the original's {whole:,} bytes (the rest was not kept)"
    )
    if ref.masked:
        kept = (
            f"{kept.replace(', byte for byte', '')}, with credentials masked "
            f"({'; '.join(ref.masked)}), so not byte for byte"
        )
    return (
        f"[memflow: {projection.kind} output projected, {projection.projected_chars:,} of "
        f"{projection.original_chars:,} chars shown. {kept}: "
        f"GET /api/v1/workspaces/{workspace.slug}/compression/{ref.sha256}/]"
    )


def compression_store(
    *,
    workspace: Workspace,
    content: bytes,
    content_type: str = "text/plain; charset=utf-8",
    tool_name: str = "",
    exit_code: int | None = None,
    session: AgentSession | None = None,
    budget_tokens: int | None = None,
    now: datetime | None = None,
    truncated_from_size: int | None = None,
    masked_before: Sequence[str] = (),
) -> Compressed:
    """Keep the original under its SHA-256 (once per workspace) and project it.

    Storing the same content again renews its expiry and returns the same ref.
    `truncated_from_size`: `content` is only the start of an output this many
    bytes long; the ref says so in its content type. A credential in `content`
    is cut out before it is kept, and the ref lists what was (`masked`), with
    `masked_before`: what was cut out before it reached here (an archive's).
    """
    if len(content) > MAX_COMPRESSION_BYTES:
        raise Invalid(
            f"A tool result is limited to {MAX_COMPRESSION_BYTES:,} bytes; this one has "
            f"{len(content):,}.",
            code="too_large",
        )
    content_type = content_type_clean(content_type)
    if truncated_from_size is not None and truncated_from_size > len(content):
        content_type = f"{content_type}; {TRUNCATED_PARAM}={truncated_from_size}"
    now = now or timezone.now()
    content, text, masked = original_masked(content)
    sha = hashlib.sha256(content).hexdigest()
    budget = int(budget_tokens or knob(workspace, "projection_threshold_tokens"))
    projection = project(
        text, budget_tokens=budget, tool_name=tool_name or None, exit_code=exit_code
    )
    expires = now + timedelta(days=float(knob(workspace, "compression_ttl_days")))
    ref = _ref_upsert(
        workspace=workspace,
        sha=sha,
        defaults={
            "content": content,
            "content_type": content_type,
            "size": len(content),
            "kind": projection.kind if projection else "",
            "projected_chars": projection.projected_chars if projection else None,
            "masked": [*masked_before, *masked],
            "tool_name": tool_name[:200],
            "exit_code": exit_code,
            "session": session,
            "expires_at": expires,
        },
        expires=expires,
    )
    if projection is None:
        return Compressed(ref=ref, projection=None, text=text)
    marker = compression_marker(workspace=workspace, ref=ref, projection=projection)
    return Compressed(ref=ref, projection=projection, text=f"{marker}\n{projection.text}")


def original_masked(content: bytes) -> tuple[bytes, str, list[str]]:
    """(what may be kept, as text, what was masked in it): an output that holds a
    credential is kept with each one cut out, never as it was (see `CompressionRef.masked`).

    Its hash is the kept bytes', so what comes back by hash is what the hash names.
    """
    text = content.decode("utf-8", errors="replace")
    masked = mask_secrets(text)
    if not masked.changed:
        return content, text, []
    return masked.text.encode("utf-8"), masked.text, masked.summary()


def compression_masked_legacy(*, ref: CompressionRef) -> CompressionRef:
    """`ref`, with its credentials masked in place if it was kept before they were
    (`masked` NULL). Call before serving a ref. Its hash stays the one it was
    stored and linked under; its `masked` list says the bytes are not those."""
    if ref.masked is not None:
        return ref
    content, _, masked = original_masked(bytes(ref.content))
    ref.masked = masked
    fields = ["masked"]
    if masked:
        ref.content, ref.size = content, len(content)
        fields += ["content", "size"]
    CompressionRef.objects.filter(pk=ref.pk).update(**{f: getattr(ref, f) for f in fields})
    return ref


def _ref_upsert(
    *, workspace: Workspace, sha: str, defaults: dict[str, object], expires: datetime
) -> CompressionRef:
    existing = CompressionRef.objects.filter(workspace=workspace, sha256=sha).first()
    if existing is None:
        quota_check(workspace=workspace, stored_bytes=cast(int, defaults["size"]))
        try:
            with transaction.atomic():
                return CompressionRef.objects.create(workspace=workspace, sha256=sha, **defaults)
        except IntegrityError:  # the same content, stored by a concurrent call
            existing = CompressionRef.objects.get(workspace=workspace, sha256=sha)
    if existing.expires_at is None or existing.expires_at < expires:
        CompressionRef.objects.filter(pk=existing.pk).update(expires_at=expires)
        existing.expires_at = expires
    return existing


def compression_pin(*, ref: CompressionRef, pinned: bool) -> CompressionRef:
    CompressionRef.objects.filter(pk=ref.pk).update(pinned=pinned)
    ref.pinned = pinned
    return ref


def compression_cleanup(*, now: datetime | None = None) -> int:
    """Delete unpinned refs past their expiry (the daily schedule calls this)."""
    now = now or timezone.now()
    # Uses index: compressionref_expiry_idx.
    deleted, _ = CompressionRef.objects.filter(pinned=False, expires_at__lt=now).delete()
    return deleted


# --- scratchpad ---------------------------------------------------------------------------

SCRATCHPAD_OPS = ("append", "replace", "rethink")


def scratchpad_edit(*, session: AgentSession, op: str, text: str, old_text: str = "") -> Scratchpad:
    """Append (joined by a newline), replace the first `old_text`, or rewrite it all.

    A result past the workspace's cap is refused whole: the model decides what
    to drop, nothing is sliced off silently.
    """
    if op not in SCRATCHPAD_OPS:
        raise Invalid(
            f"Unknown operation {op!r}; use one of {', '.join(SCRATCHPAD_OPS)}.", code="invalid_op"
        )
    limit = int(knob(session.workspace, "scratchpad_max_chars"))
    with transaction.atomic():
        pad, _ = Scratchpad.objects.select_for_update().get_or_create(session=session)
        if op == "append":
            new = f"{pad.text}\n{text}" if pad.text else text
        elif op == "replace":
            if not old_text:
                raise Invalid(
                    "`replace` needs the `old_text` to replace.", code="old_text_required"
                )
            if old_text not in pad.text:
                raise NotFound(
                    "The scratchpad does not contain that `old_text`.", code="old_text_not_found"
                )
            new = pad.text.replace(old_text, text, 1)
        else:
            new = text
        label = find_secret(text)
        if label:
            raise Invalid(
                f"That text looks like it holds a credential ({label}); it was not stored.",
                code="secret_detected",
            )
        if len(new) > limit:
            raise Invalid(
                f"The scratchpad would hold {len(new):,} chars; its limit is {limit:,}. "
                "Rethink it shorter or replace part of it.",
                code="scratchpad_full",
            )
        pad.text = new
        pad.version += 1
        pad.save(update_fields=["text", "version", "updated_at"])
    return pad


# --- layered summaries ----------------------------------------------------------------------

NoteBuilder = Callable[[Sequence[NoteEvent]], tuple[str, str]]


# Events that are not the session's history: what memflow injected, and the
# bookends that carry nothing a note or a fold needs.
NOT_HISTORY = ("injection", "session-start", "session-end", "work-capture")


def session_turn_tokens(*, session: AgentSession) -> list[planning.Turn]:
    """Estimated tokens and tool calls per user turn, from the session's event log, in turn order."""
    rows = (
        SessionEvent.objects.filter(session=session)
        .exclude(kind__in=NOT_HISTORY)
        .values("turn")
        .annotate(total=Sum("tokens"), steps=Count("id", filter=Q(kind="post-tool-use")))
        .order_by("turn")
    )
    return [
        planning.Turn(number=r["turn"], tokens=float(r["total"] or 0), steps=int(r["steps"]))
        for r in rows
    ]


def session_last_turn(*, session: AgentSession) -> int:
    """The last turn with history in the session's log (0 for none)."""
    last = (
        SessionEvent.objects.filter(session=session)
        .exclude(kind__in=NOT_HISTORY)
        .aggregate(turn=Max("turn"))["turn"]
    )
    return int(last or 0)


def summaries_request_fold(*, session: AgentSession) -> int:
    """Start a new fold generation; any fold still running for the session stops."""
    AgentSession.objects.filter(pk=session.pk).update(fold_generation=F("fold_generation") + 1)
    session.refresh_from_db(fields=["fold_generation"])
    return session.fold_generation


def _span_events(session: AgentSession, start: int, end: int) -> list[NoteEvent]:
    """The note events of turns start..end."""
    rows = (
        SessionEvent.objects.filter(session=session, turn__gte=start, turn__lte=end)
        .exclude(kind__in=NOT_HISTORY)
        .order_by("at", "id")
        .values_list("kind", "payload")
    )
    # note_events numbers turns from 1 at the span's first prompt.
    return [replace(e, turn=e.turn + start - 1) for e in note_events(rows)]


def _default_builder(workspace: Workspace) -> NoteBuilder:
    config = LlmConfig.from_settings()

    def build(events: Sequence[NoteEvent]) -> tuple[str, str]:
        return note_build(events, config=config)

    return build


def summaries_fold(
    *,
    session: AgentSession,
    generation: int,
    force: bool = False,
    builder: NoteBuilder | None = None,
) -> list[SummaryNode]:
    """Fold the session's history into handoff notes, as far as the plan allows.

    Runs in a worker. Before writing each node it checks that `generation`
    is still the session's current one: a newer fold request supersedes this
    run, which then stops without writing. `force` folds the remaining
    history even under a leaf's token span (a compaction is imminent).
    """
    workspace = session.workspace
    build = builder or _default_builder(workspace)
    settings = planning.FoldSettings(
        leaf_tokens=int(knob(workspace, "summary_leaf_tokens")),
        keep_turns=int(knob(workspace, "summary_keep_turns")),
        fanout=int(knob(workspace, "summary_condense_fanout")),
        max_depth=int(knob(workspace, "summary_max_depth")),
    )
    written: list[SummaryNode] = []
    turns = session_turn_tokens(session=session)
    while True:
        active = [
            planning.Node(depth=n.depth, start=n.start_turn, end=n.end_turn, tokens=n.tokens)
            for n in SummaryNode.objects.filter(session=session, parent__isnull=True)
        ]
        step = planning.plan_next(turns=turns, active=active, settings=settings, force=force)
        if step is None:
            return written
        if step.children:
            children = list(
                SummaryNode.objects.filter(
                    session=session,
                    parent__isnull=True,
                    depth=step.depth - 1,
                    start_turn__gte=step.start,
                    end_turn__lte=step.end,
                ).order_by("start_turn")
            )
            events = [NoteEvent(kind="note", turn=c.end_turn, text=c.text) for c in children]
        else:
            children = []
            events = _span_events(session, step.start, step.end)
        text, how = build(events)
        node = _node_write(
            session=session,
            generation=generation,
            step=step,
            text=text,
            builder=how,
            tokens=int(sum(t.tokens for t in turns if step.start <= t.number <= step.end)),
            children=children,
        )
        if node is None:
            logger.info("fold of session %s superseded (generation %s)", session.pk, generation)
            return written
        written.append(node)


def _node_write(
    *,
    session: AgentSession,
    generation: int,
    step: planning.Step,
    text: str,
    builder: str,
    tokens: int,
    children: list[SummaryNode],
) -> SummaryNode | None:
    with transaction.atomic():
        current = (
            AgentSession.objects.select_for_update()
            .filter(pk=session.pk)
            .values_list("fold_generation", flat=True)
            .first()
        )
        if current != generation:
            return None
        node, _ = SummaryNode.objects.update_or_create(
            session=session,
            node_id=planning.node_id(step.depth, step.start, step.end),
            defaults={
                "depth": step.depth,
                "start_turn": step.start,
                "end_turn": step.end,
                "text": text,
                "builder": builder,
                "tokens": tokens,
                "generation": generation,
                "parent": None,
            },
        )
        if children:
            SummaryNode.objects.filter(pk__in=[c.pk for c in children]).update(parent=node)
    return node
