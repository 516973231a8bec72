"""Providers and observers, registered once per process by each app."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from contexts.models import AgentSession, ApiKey, Workspace

EVENTS = ("session-start", "user-prompt", "post-tool-use", "stop", "pre-compact", "session-end")

# What Claude Code calls each event in `hookSpecificOutput.hookEventName`.
CLAUDE_EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}


# Claude Code reports a failed tool call as an event of its own. It runs as a
# post-tool-use with `HookContext.tool_failed` set, so every capability that
# reads tool calls (the session log, handoff notes, skills) sees the failure.
FAILURE_ALIASES = {"post-tool-use-failure": "post-tool-use"}
CLAUDE_FAILURE_NAME = "PostToolUseFailure"


def canonical_event(event: str, payload: Any) -> tuple[str, bool]:
    """(the event memflow runs, whether it reports a failed tool call)."""
    fired = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if event in FAILURE_ALIASES:
        return FAILURE_ALIASES[event], True
    return event, event == "post-tool-use" and fired == CLAUDE_FAILURE_NAME


# The tags memflow frames injected data with. Text from memories, events or
# notes that spells one of them would close (or forge) a frame, and what
# follows would reach the model as if memflow said it.
_FRAME_TAG = re.compile(
    r"<(?=/?\s*(?:memflow-[\w-]*|flowctx-[\w-]*|working_memory|working-context)\b)", re.I
)


def inert(text: str) -> str:
    """Stored text made safe to place inside one of memflow's frames."""
    return _FRAME_TAG.sub("&lt;", text)


@dataclass(frozen=True)
class Block:
    """One piece of what the model sees. Blocks render in (order, name) order."""

    name: str
    order: int
    text: str
    memory_ids: tuple[int, ...] = ()


@dataclass
class HookContext:
    event: str
    workspace: Workspace
    session: AgentSession
    user: User
    payload: dict[str, Any]
    app: str
    api_key: ApiKey | None = None
    # The text the user actually typed, when this event carries one worth
    # using (None for system reminders, heartbeats, secrets, sub-agents…).
    prompt: str | None = None
    skipped_reason: str = ""
    delegation_depth: int = 0
    # post-tool-use: the harness reported the tool call as failed (PostToolUseFailure).
    tool_failed: bool = False
    session_is_new: bool = False
    muted: bool = False
    # Whether session-constant blocks (identity, frozen core, preload) belong
    # in this answer: at session start, or when the harness asks for them.
    constant: bool = False
    notes: list[str] = field(default_factory=list)
    # post-tool-use: the projected tool result, for harnesses that can show
    # it instead of the original ({"sha256", "text", "kind", …}).
    tool_result: dict[str, Any] | None = None
    # Work shared between capabilities within one call (e.g. the prompt's embedding).
    cache: dict[str, Any] = field(default_factory=dict)


# (workspace, prompt, cache): begin work that providers will need, before the
# session's bookkeeping, leaving it in what becomes `HookContext.cache`.
StarterFn = Callable[["Workspace", str, dict[str, Any]], None]
ProviderFn = Callable[[HookContext], Block | Iterable[Block] | None]
ObserverFn = Callable[[HookContext], None]
InjectionObserverFn = Callable[[HookContext, list[Block]], None]


@dataclass(frozen=True)
class Entry:
    name: str
    events: frozenset[str]
    fn: Callable[..., Any]
    # An injection observer that may run beside the others (see register_injection_observer).
    beside: bool = False


_starters: dict[str, Entry] = {}
_providers: dict[str, Entry] = {}
_observers: dict[str, Entry] = {}
_injection_observers: dict[str, Entry] = {}


def _events(events: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(events)
    unknown = chosen - set(EVENTS)
    if unknown:
        raise ValueError(f"unknown hook events {sorted(unknown)}")
    return chosen


def register_starter(name: str, *, events: Iterable[str], fn: StarterFn) -> None:
    """Start work early: called with the prompt the user typed, before anything is recorded.

    Only for a prompt that is kept (see `pipeline.classify_prompt`) of a
    top-level agent, i.e. one that is captured. A starter should hand slow
    work to a thread (`Embedder.encode_soon`) and return at once.
    """
    _starters[name] = Entry(name=name, events=_events(events), fn=fn)


def register_provider(name: str, *, events: Iterable[str], fn: ProviderFn) -> None:
    """Add a block-maker; registering the same name again replaces it."""
    _providers[name] = Entry(name=name, events=_events(events), fn=fn)


def register_observer(name: str, *, events: Iterable[str], fn: ObserverFn) -> None:
    """React to an event before the providers run (capture, freeze, store)."""
    _observers[name] = Entry(name=name, events=_events(events), fn=fn)


def register_injection_observer(
    name: str,
    *,
    fn: InjectionObserverFn,
    events: Iterable[str] = EVENTS,
    beside: bool = False,
) -> None:
    """React to what was injected (the usegate ledger, the prompt's capture).

    The others share one transaction. One registered `beside` runs at the
    same time as them, on a side thread with a connection and transaction of
    its own, when the server's pool has a connection free; otherwise inside
    the shared transaction, after them. Either way the answer waits for it.
    It must not need what the others write, and must take the database locks
    it shares with them first (as every writer of memories does).
    """
    _injection_observers[name] = Entry(name=name, events=_events(events), fn=fn, beside=beside)


def starters_for(event: str) -> list[Entry]:
    return [entry for _, entry in sorted(_starters.items()) if event in entry.events]


def providers_for(event: str) -> list[Entry]:
    return [entry for _, entry in sorted(_providers.items()) if event in entry.events]


def observers_for(event: str) -> list[Entry]:
    return [entry for _, entry in sorted(_observers.items()) if event in entry.events]


def injection_observers(event: str) -> list[Entry]:
    """Those that share the transaction first, then those that may run beside."""
    return [
        entry
        for _, entry in sorted(_injection_observers.items(), key=lambda e: (e[1].beside, e[0]))
        if event in entry.events
    ]
