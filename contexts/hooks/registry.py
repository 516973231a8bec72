"""Providers and observers, registered once per process by each app."""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from contexts.models import AgentSession, ApiKey, Workspace

EVENTS = (
    "session-start",
    "user-prompt",
    "post-tool-use",
    "stop",
    "pre-compact",
    "session-end",
    # A sub-agent (Claude Code's Agent tool): its task as the tool is called, its start
    # (which takes context, as a session start does), its end.
    "pre-tool-use",
    "subagent-start",
    "subagent-stop",
)

# What Claude Code calls each event in `hookSpecificOutput.hookEventName`.
CLAUDE_EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
    "pre-tool-use": "PreToolUse",
    "subagent-start": "SubagentStart",
    "subagent-stop": "SubagentStop",
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


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class MemoryWhy:
    """Why one memory is in a block, as its provider ranked it when the block was made.

    Kept with the injection rather than recomputed later, so the audit stays
    true after the library changes. Ranks count from 1.
    """

    id: int
    rank: int  # in the provider's final order (for recall: after retention)
    score: float | None = None  # what ordered them: the fused score times the retention weight
    fused: float | None = None  # the two arms' fused score, before retention
    cosine: float | None = None  # the dense arm
    dense_rank: int | None = None
    bm25: float | None = None  # the lexical arm
    lexical_rank: int | None = None
    terms: tuple[str, ...] = ()  # the query's terms the entry holds
    retention: float | None = None
    basis: str = ""  # for a block not ranked by a query: what chose the entry

    # Stored keys: short, since every injection of a recall carries a dozen of these.
    _KEYS = (
        ("id", "id"),
        ("rank", "rank"),
        ("score", "score"),
        ("fused", "fused"),
        ("cosine", "cos"),
        ("dense_rank", "dr"),
        ("bm25", "bm25"),
        ("lexical_rank", "lr"),
        ("retention", "ret"),
    )

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for attr, key in self._KEYS:
            value = getattr(self, attr)
            if value is not None:
                data[key] = round(value, 4) if isinstance(value, float) else value
        if self.terms:
            data["terms"] = list(self.terms)
        if self.basis:
            data["basis"] = self.basis
        return data

    @classmethod
    def from_json(cls, data: Any) -> MemoryWhy | None:
        """As stored by `as_json`; None for anything else (a hand-made or damaged payload)."""
        if not isinstance(data, dict) or _int(data.get("id")) is None:
            return None
        terms = data.get("terms")
        return cls(
            id=data["id"],
            rank=_int(data.get("rank")) or 0,
            score=_num(data.get("score")),
            fused=_num(data.get("fused")),
            cosine=_num(data.get("cos")),
            dense_rank=_int(data.get("dr")),
            bm25=_num(data.get("bm25")),
            lexical_rank=_int(data.get("lr")),
            terms=tuple(str(t) for t in terms if isinstance(t, str))
            if isinstance(terms, list)
            else (),
            retention=_num(data.get("ret")),
            basis=str(data.get("basis") or ""),
        )


@dataclass(frozen=True)
class Ranking:
    """Why a block holds the memories it does: each one's part, and how the arms were weighed."""

    memories: tuple[MemoryWhy, ...] = ()
    lexical_weight: float | None = None  # how far the lexical arm was trusted for this query
    reason: str = ""  # why that weight, or how the block chooses its entries

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"memories": [m.as_json() for m in self.memories]}
        if self.lexical_weight is not None:
            data["weight"] = round(self.lexical_weight, 3)
        if self.reason:
            data["reason"] = self.reason
        return data

    @classmethod
    def from_json(cls, data: Any) -> Ranking | None:
        if not isinstance(data, dict):
            return None
        memories = data.get("memories")
        whys = (MemoryWhy.from_json(m) for m in (memories if isinstance(memories, list) else []))
        return cls(
            memories=tuple(w for w in whys if w is not None),
            lexical_weight=_num(data.get("weight")),
            reason=str(data.get("reason") or ""),
        )

    def of(self, memory_id: int) -> MemoryWhy | None:
        return next((m for m in self.memories if m.id == memory_id), None)


@dataclass(frozen=True)
class Block:
    """One piece of what the model sees. Blocks render in (order, name) order."""

    name: str
    order: int
    text: str
    memory_ids: tuple[int, ...] = ()
    # Why these memories: recorded with the injection (the session page, the sessions API).
    ranking: Ranking | None = None


@dataclass(frozen=True)
class SessionView:
    """What the session's model has been given since its context last started over.

    Read from the session log (the recorded injections): a resume or a
    continue keeps everything given before in the conversation, so it is not
    given again; a compaction (or /clear) replaces the conversation, so what
    came before it no longer counts as given.
    """

    # Block name → sha256 of the text last given under that name.
    blocks: dict[str, str] = field(default_factory=dict)
    memory_ids: frozenset[int] = frozenset()

    def given(self, block: Block) -> bool:
        """Whether this very block (name and bytes) is already in the model's context."""
        return self.blocks.get(block.name) == block_sha(block.text)


def block_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_MCP_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class Tools:
    """How the model can reach memflow: Claude Code's MCP tools, else the `memflow` command.

    The hook client says which at session start (`memflow_tools`: the MCP
    server its Claude Code settings name for this memflow, and the command
    that runs memflow on that machine); the log keeps it for the session.
    Without word from a client, the `memflow` command is named.
    """

    workspace: str
    session: str
    mcp: str | None = None
    cli: str = "memflow"
    # Whether the command's own configuration names the workspace.
    cli_workspace: bool = False

    @classmethod
    def from_client(cls, said: Any, *, workspace: str, session: str) -> Tools:
        said = said if isinstance(said, dict) else {}
        mcp = said.get("mcp")
        cli = said.get("cli")
        return cls(
            workspace=workspace,
            session=session,
            mcp=_MCP_NAME.sub("_", mcp)[:64] if isinstance(mcp, str) and mcp.strip() else None,
            cli=cli.strip()[:500] if isinstance(cli, str) and cli.strip() else "memflow",
            cli_workspace=said.get("cli_workspace") is True,
        )

    def mcp_tool(self, name: str) -> str:
        return f"mcp__{self.mcp}__{name}"

    def command(self, verb: str, *args: str) -> str:
        where = [] if self.cli_workspace else ["--workspace", self.workspace]
        return " ".join([self.cli, verb, *where, *(shlex.quote(a) for a in args)])

    def retrieve(self, sha256: str) -> str:
        """How to get a stored tool output back, byte for byte."""
        if self.mcp:
            return f'{self.mcp_tool("flowctx_retrieve")}(hash="{sha256}")'
        return f"`{self.command('retrieve', sha256)}` in your shell"

    def retrieve_node(self, node: str) -> str:
        if self.mcp:
            # Single quotes: this goes into an XML attribute.
            return (
                f"{self.mcp_tool('flowctx_retrieve')}(node='{node}', session_id='{self.session}')"
            )
        return f"`{self.command('retrieve', '--session', self.session, '--node', node)}`"


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
    # The sub-agent an event comes from (Claude Code's agent_id and agent_type), "" for
    # the main thread. A sub-agent shares its session with the main thread.
    agent_id: str = ""
    agent_type: str = ""
    # post-tool-use: the harness reported the tool call as failed (PostToolUseFailure).
    tool_failed: bool = False
    session_is_new: bool = False
    muted: bool = False
    # Whether session-constant blocks (identity, frozen core, preload) belong
    # in this answer: at session start, or when the harness asks for them.
    constant: bool = False
    notes: list[str] = field(default_factory=list)
    # Said to the person, not the model (Claude Code's `systemMessage`): what
    # they must fix, e.g. a declaration that does not parse.
    messages: list[str] = field(default_factory=list)
    # post-tool-use: the projected tool result, for harnesses that can show
    # it instead of the original ({"sha256", "text", "kind", …}).
    tool_result: dict[str, Any] | None = None
    # Work shared between capabilities within one call (e.g. the prompt's embedding).
    cache: dict[str, Any] = field(default_factory=dict)
    # What the session's model already has (a provider leaves those memories out).
    seen: SessionView = field(default_factory=SessionView)
    tools: Tools | None = None

    @property
    def callable(self) -> Tools:
        """How the model can call memflow in this session."""
        return self.tools or Tools(workspace=self.workspace.slug, session=self.session.external_id)


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


def unregister(name: str) -> None:
    """Remove a capability registered under `name`, whatever its kind (a test's, once it is done)."""
    for table in (_starters, _providers, _observers, _injection_observers):
        table.pop(name, None)


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
