"""One hook call, start to finish.

resolve workspace → classify the prompt → starters (slow work begins on a
side thread) → session (created on first sight) → append the event to the
session's log → observers → providers → render → injection observers (the
ledger; the capture beside them) → record what was injected.

A provider or observer that fails is logged and skipped: a hook must never
break an agent's turn because one capability misbehaved.
"""

from __future__ import annotations

import logging
import re
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction
from django.db.models import F, Func, JSONField, Value
from django.db.models.fields.json import KT, KeyTransform
from django.utils import timezone
from django.utils.text import slugify

from contexts.errors import Invalid, NotFound
from contexts.hooks.registry import (
    CLAUDE_EVENT_NAMES,
    CLAUDE_FAILURE_NAME,
    EVENTS,
    FAILURE_ALIASES,
    Block,
    Entry,
    HookContext,
    SessionView,
    Tools,
    block_sha,
    canonical_event,
    injection_observers,
    observers_for,
    providers_for,
    starters_for,
)
from contexts.models import AgentSession, ApiKey, Membership, SessionEvent, Workspace
from contexts.secrets import find_secret, redact_json, scan_budget
from contexts.tenancy.selectors import (
    Access,
    agent_session_check_owner,
    workspace_access,
    workspace_create_check,
)
from memflow_site.runtime.side_threads import side_executor
from memflow_site.runtime.tokens import estimate_tokens

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

# Text the harness sends that the user did not type.
_HEARTBEATS = (
    "continue working toward the active session goal",
    "continue from where you left off",
)
# `[heartbeat] automation tick …`, `[cron] …`, `(scheduled run) …`: a scheduler's, not a person's.
_AUTOMATION_TAG = re.compile(
    r"^[\[(<]\s*(?:heartbeat|automation|scheduled|schedule|cron|tick|keep-?alive|ping)\b", re.I
)
# A reply that only acknowledges says nothing worth finding again.
_ACKNOWLEDGEMENTS = frozenset(
    {
        *("ok", "okay", "k", "kk", "yes", "yep", "yeah", "y", "no", "nope", "n", "sure"),
        *("thanks", "thank you", "thx", "ty", "cool", "nice", "great", "good", "fine"),
        *("done", "go", "go on", "go ahead", "continue", "proceed", "lgtm", "sounds good"),
        *("do it", "please", "yes please", "ok thanks", "okay thanks"),
    }
)
_ACK_PUNCTUATION = re.compile(r"[\s.!?,:;👍🙏]+$")
_SYSTEM_PREFIXES = (
    "<system-reminder",
    "<system>",
    "<peer",
    "[peer",
    "<model-switch",
    "<command-",
    "<local-command",
)
# What Claude Code sends as a user turn when a background agent finishes: the agent's
# report, not the user's words (its result reaches the model in that very turn).
_AGENT_REPORT = "<task-notification"
_MODEL_SWITCH = re.compile(
    r"^(model (switched|changed) to|switched model to|now using model)\b", re.I
)


@dataclass
class HookOutcome:
    context: HookContext
    blocks: list[Block] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(block.text for block in self.blocks if block.text)

    def as_json(self) -> dict[str, Any]:
        ctx = self.context
        text = self.text
        body: dict[str, Any] = {
            "event": ctx.event,
            "workspace": ctx.workspace.slug,
            "session": ctx.session.external_id,
            "blocks": [
                {"name": b.name, "order": b.order, "text": b.text, "memory_ids": list(b.memory_ids)}
                for b in self.blocks
            ],
            "additionalContext": text,
            "captured": ctx.prompt is not None and not ctx.skipped_reason,
            "skipped": ctx.skipped_reason or None,
            "muted": ctx.muted,
            "notes": ctx.notes,
        }
        if ctx.messages:
            body["systemMessage"] = "\n".join(ctx.messages)
        if ctx.tool_result is not None:
            # For harnesses that can replace a tool result (dsh's
            # `tools/post-execute`): the projection to show instead.
            body["tool_result"] = ctx.tool_result
        if text:
            body["hookSpecificOutput"] = {
                "hookEventName": (
                    CLAUDE_FAILURE_NAME if ctx.tool_failed else CLAUDE_EVENT_NAMES[ctx.event]
                ),
                "additionalContext": text,
            }
        return body


# --- resolving who and where ------------------------------------------------------------


def _string(payload: dict[str, Any], *names: str) -> str:
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def resolve_workspace(*, payload: dict[str, Any], user: User, api_key: ApiKey | None) -> Workspace:
    """Explicit `workspace`, else the key's workspace, else the project root's workspace."""
    slug = _string(payload, "workspace")
    if slug:
        return workspace_access(user=user, slug=slug, access=Access.WRITE, api_key=api_key)[0]
    if api_key is not None and api_key.workspace is not None:
        return workspace_access(
            user=user, slug=api_key.workspace.slug, access=Access.WRITE, api_key=api_key
        )[0]
    root = _string(payload, "project_root")
    if root:
        return _workspace_for_root(
            user=user, root=root, api_key=api_key, create=bool(payload.get("create_workspace"))
        )
    raise Invalid(
        "Say which workspace: a `workspace` field, a workspace-restricted key, or a `project_root`.",
        code="workspace_required",
    )


def _workspace_for_root(
    *, user: User, root: str, api_key: ApiKey | None, create: bool
) -> Workspace:
    writable = Membership.objects.filter(
        user=user, role__in=[Membership.Role.OWNER, Membership.Role.EDITOR]
    ).select_related("workspace")
    for membership in writable:
        if root in (membership.workspace.settings or {}).get("project_roots", []):
            return workspace_access(
                user=user, slug=membership.workspace.slug, access=Access.WRITE, api_key=api_key
            )[0]
    if not create:
        raise NotFound(
            f"No workspace is mapped to {root!r}; map one in its settings or allow creating it.",
            code="project_not_mapped",
        )
    # Only where `POST workspaces/` would let the same key: a read key creates nothing.
    workspace_create_check(api_key=api_key)
    from contexts.tenancy import services

    base = slugify(root.rstrip("/").rsplit("/", 1)[-1]) or "project"
    slug, n = base, 1
    while Workspace.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    workspace = services.workspace_create(user=user, slug=slug, name=base)
    workspace.settings = {**(workspace.settings or {}), "project_roots": [root]}
    workspace.save(update_fields=["settings"])
    return workspace


def session_project(payload: dict[str, Any]) -> str:
    """The session's project: the root directory the client resolved, else its cwd."""
    root = _string(payload, "project_root") or _string(payload, "cwd")
    return root.rstrip("/") or root


def delegation_depth(payload: dict[str, Any]) -> int:
    for name in ("delegation_depth", "delegationDepth", "agent_depth"):
        value = payload.get(name)
        if isinstance(value, int) and value >= 0:
            return value
    # Claude Code names the sub-agent an event comes from, not how deep it is.
    return 1 if _string(payload, "agent_id") else 0


def classify_prompt(payload: dict[str, Any]) -> tuple[str | None, str]:
    """(the text the user typed, or None; why it is skipped)."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return None, "no prompt"
    source = payload.get("source")
    if isinstance(source, dict) and source.get("kind") not in (None, "user"):
        return None, f"not typed by the user ({source.get('kind')})"
    text = prompt.strip()
    lowered = text.lower()
    if len(text) < 2:
        return None, "too short"
    if lowered.startswith(_SYSTEM_PREFIXES):
        return None, "a system or peer message"
    if lowered.startswith(_AGENT_REPORT):
        return None, "a background agent's report"
    if any(lowered.startswith(h) for h in _HEARTBEATS) or _AUTOMATION_TAG.match(text):
        return None, "an automation heartbeat"
    if _ACK_PUNCTUATION.sub("", lowered) in _ACKNOWLEDGEMENTS or not _ACK_PUNCTUATION.sub(
        "", lowered
    ):
        return None, "an acknowledgement"
    if _MODEL_SWITCH.match(text):
        return None, "a model-switch notice"
    if find_secret(text):  # the one credential filter for every path
        return None, "looks like it holds a credential"
    return text, ""


def is_muted(workspace: Workspace, user: User, now: datetime) -> bool:
    settings = workspace.settings or {}
    until = [settings.get("muted_until"), (settings.get("muted_users") or {}).get(str(user.pk))]
    return any(isinstance(u, str) and u > now.isoformat() for u in until)


def event_tokens(payload: Any) -> float:
    """The estimated tokens of the text an event carries (what folds plan with)."""
    if isinstance(payload, dict):
        return sum(event_tokens(v) for v in payload.values())
    if isinstance(payload, list):
        return sum(event_tokens(v) for v in payload)
    return estimate_tokens(payload) if isinstance(payload, str) else 0.0


# --- the run ----------------------------------------------------------------------------------


def loggable(payload: dict[str, Any]) -> dict[str, Any]:
    """The event as the session log keeps it: a whole tool output the client sent
    (`memflow_output`) is described, not copied — its compression ref holds it."""
    output = payload.get("memflow_output")
    if not isinstance(output, dict):
        return payload
    described = {k: v for k, v in output.items() if k not in ("text", "base64")}
    return {**payload, "memflow_output": described}


# The events that start a context: session-constant blocks belong in their answer.
_STARTS = ("session-start", "subagent-start")


def hook_handle(*, event: str, payload: Any, user: User, api_key: ApiKey | None) -> HookOutcome:
    """Run one hook call. Its credential scans (the prompt, the logged payload,
    a stored tool output) share one budget, MEMFLOW_SECRETS_BUDGET_MS: a thread
    serving hooks never waits on them longer."""
    with scan_budget():
        return _hook_run(event=event, payload=payload, user=user, api_key=api_key)


def _hook_run(*, event: str, payload: Any, user: User, api_key: ApiKey | None) -> HookOutcome:
    event, payload, tool_failed = _checked_event(event, payload)
    session_id = _string(payload, "session_id", "sessionId")
    if not session_id:
        raise Invalid("The hook JSON has no session_id.", code="session_id_required")
    workspace = resolve_workspace(payload=payload, user=user, api_key=api_key)
    app = _string(payload, "app") or ("claude-code" if "hook_event_name" in payload else "")
    now = timezone.now()
    depth = delegation_depth(payload)
    prompt, skipped_reason = classify_prompt(payload) if event == "user-prompt" else (None, "")
    cache: dict[str, Any] = {}
    if prompt is not None and depth == 0:
        # E.g. the prompt's embedding, computed while the session is recorded.
        for entry in starters_for(event):
            _guarded(entry.name, entry.fn, workspace, prompt, cache)
    new_session = AgentSession(
        workspace=workspace,
        user=user,
        external_id=session_id[:200],
        app=app[:64],
        cwd=_string(payload, "cwd"),
        project=session_project(payload),
        device=_string(payload, "device")[:200],
        params=redact_json(env) if isinstance(env := payload.get("env"), dict) else {},
    )
    session, created = _record_event(new_session, event, payload, now)
    ctx = HookContext(
        event=event,
        workspace=workspace,
        session=session,
        user=user,
        payload=payload,
        app=app or session.app,
        api_key=api_key,
        prompt=prompt,
        skipped_reason=skipped_reason,
        delegation_depth=depth,
        agent_id=_string(payload, "agent_id")[:200],
        agent_type=_string(payload, "agent_type")[:200],
        tool_failed=tool_failed,
        session_is_new=created,
        muted=is_muted(workspace, user, now),
        constant=event in _STARTS or bool((payload.get("memflow") or {}).get("constant")),
        cache=cache,
    )
    ctx.seen, ctx.tools = session_view(session=session, workspace=workspace)
    if event == "subagent-start":
        # A sub-agent starts with a context of its own: nothing the main thread was
        # given is in it.
        ctx.seen = SessionView()

    for entry in observers_for(event):
        _guarded(entry.name, entry.fn, ctx)
    blocks = _provided_blocks(ctx)
    _inject(ctx, blocks)
    return HookOutcome(context=ctx, blocks=blocks)


def _checked_event(event: str, payload: Any) -> tuple[str, dict[str, Any], bool]:
    """(canonical event, payload, whether the tool failed), or the error a caller gets."""
    if event not in EVENTS and event not in FAILURE_ALIASES:
        raise NotFound(
            f"Unknown hook event {event!r}; use one of {', '.join(EVENTS)}.", code="unknown_event"
        )
    if not isinstance(payload, dict):
        raise Invalid("A hook body is the harness's JSON object.", code="invalid_payload")
    event, tool_failed = canonical_event(event, payload)
    if tool_failed and "hook_event_name" not in payload:
        # Posted to the failure endpoint by a harness that does not name its
        # events: flagged the way the note and skill readers recognise.
        payload = {**payload, "is_error": True}
    return event, payload, tool_failed


def _record_event(
    new_session: AgentSession, event: str, payload: dict[str, Any], now: datetime
) -> tuple[AgentSession, bool]:
    """The session (found, or `new_session` created) with this event in its log."""
    with transaction.atomic():
        session, created = _session_turn(new_session, turn=event == "user-prompt")
        SessionEvent.objects.create(
            session=session,
            kind=event,
            # Kept whole, unknown fields included, but never a credential: the
            # log is shown in the dashboard and exported.
            payload=redact_json(logged := loggable(payload)),
            turn=max(session.turns, 1),
            tokens=int(event_tokens(logged)),
        )
        if event == "session-end" and session.ended_at is None:
            AgentSession.objects.filter(pk=session.pk).update(ended_at=now)
    return session, created


def _provided_blocks(ctx: HookContext) -> list[Block]:
    """What the providers add for this event, in order, less what the session has seen."""
    blocks: list[Block] = []
    for entry in providers_for(ctx.event):
        produced = _guarded(entry.name, entry.fn, ctx)
        if isinstance(produced, Block):
            blocks.append(produced)
        elif produced:
            blocks.extend(b for b in produced if isinstance(b, Block))
    return only_new(
        sorted((b for b in blocks if b.text), key=lambda b: (b.order, b.name)), ctx.seen
    )


def _inject(ctx: HookContext, blocks: list[Block]) -> None:
    """Record what was injected and run what follows from it (the ledger, rehearsal).

    It commits once: each is a savepoint of one transaction rather than a
    commit, and a wait for the disk, of its own. The capture runs beside it
    on a connection of its own when it can.
    """
    observers = injection_observers(ctx.event)
    started = {e.name: _start_beside(e, ctx, blocks) for e in observers if e.beside}
    try:
        with transaction.atomic():
            for entry in observers:
                if started.get(entry.name) is None:
                    _guarded(entry.name, entry.fn, ctx, blocks)
            if blocks:
                _record_injection(ctx, blocks)
    finally:
        # Only once this transaction is over: a side transaction waiting for
        # a lock it holds would otherwise wait for ever.
        wait([f for f in started.values() if f is not None])


def _start_beside(entry: Entry, ctx: HookContext, blocks: list[Block]) -> Future[None] | None:
    """`entry` started on a side thread with a pooled connection of its own, or None.

    None when there is no pool (nothing to gain from opening a connection),
    no connection free at once, or the call is inside a transaction, whose
    uncommitted writes another connection cannot see.
    """
    pool: Any = getattr(connection, "pool", None)  # Django's psycopg_pool, None without one
    if pool is None or connection.in_atomic_block:
        return None
    if pool.get_stats().get("pool_available", 0) < 1:
        return None
    return side_executor().submit(_on_own_connection, entry, ctx, blocks)


def _on_own_connection(entry: Entry, ctx: HookContext, blocks: list[Block]) -> None:
    try:
        _guarded(entry.name, entry.fn, ctx, blocks)
    finally:
        connection.close()  # this thread's connection, back to the pool


def _session_turn(new: AgentSession, *, turn: bool) -> tuple[AgentSession, bool]:
    """The session `new` names (created as `new` on first sight), and whether it was created.

    With `turn` (a user prompt), its turn count goes up by one in the same
    statement: an upsert that returns the row, where getting, counting and
    reading the count back were three round trips on every prompt.

    Another user's session of the same id is refused (403
    `session_belongs_to_another_user`) before anything is written to it.
    """
    if not turn:
        session, created = AgentSession.objects.get_or_create(
            workspace=new.workspace,
            external_id=new.external_id,
            defaults={
                f: getattr(new, f) for f in ("user", "app", "cwd", "project", "device", "params")
            },
        )
        agent_session_check_owner(session=session, user=new.user)
        return session, created
    new.turns = 1
    values = [f.get_db_prep_save(f.pre_save(new, add=True), connection) for f in _SESSION_FIELDS]
    rows = list(AgentSession.objects.raw(_SESSION_TURN_SQL, values))
    if not rows:  # the id is taken by another user's session: the update did not apply
        theirs = AgentSession.objects.get(workspace=new.workspace, external_id=new.external_id)
        agent_session_check_owner(session=theirs, user=new.user)
    session = rows[0]
    return session, bool(session.__dict__.pop("inserted"))


# Raw SQL: an upsert that returns the whole row (and whether it was inserted)
# has no ORM spelling.
_SESSION_FIELDS = [f for f in AgentSession._meta.concrete_fields if not f.primary_key]
_SESSION_TURN_SQL = f"""
    INSERT INTO contexts_agentsession ({", ".join(str(f.column) for f in _SESSION_FIELDS)})
    VALUES ({", ".join(["%s"] * len(_SESSION_FIELDS))})
    ON CONFLICT (workspace_id, external_id)
    DO UPDATE SET turns = contexts_agentsession.turns + 1
    WHERE contexts_agentsession.user_id IS NOT DISTINCT FROM EXCLUDED.user_id
    RETURNING {", ".join(str(f.column) for f in AgentSession._meta.concrete_fields)},
              (xmax = 0) AS inserted
"""


# --- what the session has already been given -------------------------------------------------

# A session-start from these replaces the conversation: what was given before is gone from it.
_FRESH_SOURCES = ("compact", "clear")


def _json_path(path: str) -> Func:
    return Func(
        F("payload"), Value(path), function="jsonb_path_query_array", output_field=JSONField()
    )


def session_view(*, session: AgentSession, workspace: Workspace) -> tuple[SessionView, Tools]:
    """What the session's model has been given since its context last started over, and
    how it can call memflow (as the client said at its latest session start).

    One statement over the session's log: its session starts and injections,
    each reduced in the database to block names, hashes and memory ids.
    """
    rows = (
        SessionEvent.objects.filter(session=session, kind__in=["session-start", "injection"])
        .order_by("pk")
        .annotate(
            source=KT("payload__source"),
            trigger=KT("payload__event"),
            tools=KeyTransform("memflow_tools", "payload"),
            names=_json_path("$.blocks[*].name"),
            shas=_json_path("$.blocks[*].sha256"),
            ids=_json_path("$.blocks[*].memory_ids[*]"),
        )
        .values_list("kind", "source", "trigger", "tools", "names", "shas", "ids")
    )
    blocks: dict[str, str] = {}
    ids: set[int] = set()
    said: Any = None
    for kind, source, trigger, tools, names, shas, memory_ids in rows:
        if trigger == "subagent-start":
            continue  # given to a sub-agent, in a context of its own
        if kind == "session-start":
            said = tools if tools is not None else said
            if source in _FRESH_SOURCES:
                blocks, ids = {}, set()
            continue
        blocks.update(zip(names or [], shas or [], strict=False))
        ids.update(i for i in memory_ids or [] if isinstance(i, int))
    view = SessionView(blocks=blocks, memory_ids=frozenset(ids))
    return view, Tools.from_client(said, workspace=workspace.slug, session=session.external_id)


def only_new(blocks: list[Block], seen: SessionView) -> list[Block]:
    """The blocks the model does not have yet: a block given before, byte for byte, is
    left out (it is still in the conversation), as is one whose memories all are."""
    return [
        b
        for b in blocks
        if not seen.given(b) and not (b.memory_ids and set(b.memory_ids) <= seen.memory_ids)
    ]


def _record_injection(ctx: HookContext, blocks: list[Block]) -> None:
    """What the model was given, in the turn it was given in, with why (each block's
    ranking) and, for a projected tool result, the projection offered in its place."""
    payload: dict[str, Any] = {
        "event": ctx.event,
        "blocks": [
            {
                "name": b.name,
                "order": b.order,
                "text": b.text,
                "memory_ids": list(b.memory_ids),
                "sha256": block_sha(b.text),
                **({"why": b.ranking.as_json()} if b.ranking is not None else {}),
            }
            for b in blocks
        ],
    }
    source = ctx.payload.get("source") if ctx.event == "session-start" else None
    if isinstance(source, str) and source:
        payload["source"] = source[:32]  # startup, resume, clear, compact: what a block is for
    if ctx.tool_result is not None:
        payload["tool_result"] = ctx.tool_result
    SessionEvent.objects.create(
        session=ctx.session,
        kind="injection",
        payload=payload,
        turn=max(ctx.session.turns, 1),
        tokens=int(sum(estimate_tokens(b.text) for b in blocks)),
    )


def _guarded(name: str, fn: Any, *args: Any) -> Any:
    try:
        if connection.in_atomic_block:
            # A savepoint, so a failing capability cannot poison the
            # transaction of the ones after it.
            with transaction.atomic():
                return fn(*args)
        # In autocommit there is nothing to poison, and a capability that
        # writes several rows opens its own transaction: no empty BEGIN and
        # COMMIT for every capability that has nothing to do on this event.
        return fn(*args)
    except Exception:
        logger.exception("hook capability %s failed; skipped", name)
        return None
