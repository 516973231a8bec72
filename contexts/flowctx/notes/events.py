"""A session log's (kind, payload) pairs as note events.

Payload shapes vary by harness and version, so every field is read defensively.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contexts.flowctx.notes.format import GOAL, OPEN, _middle_out

logger = logging.getLogger(__name__)

# A single tool output is kept up to this much; the rest of a 5 MB log adds
# nothing a note could use and only slows the pattern scans down.
_TOOL_TEXT_CHARS = 20_000


@dataclass(frozen=True)
class NoteEvent:
    # "prompt" | "tool" | "assistant" | "note" (a prior handoff note / compaction summary)
    kind: str
    turn: int  # user-turn number the event belongs to (1-based)
    text: str  # the prompt, the tool result text, the assistant text, or the prior note
    tool_name: str = ""
    tool_input: str = ""  # compact rendering of tool_input (e.g. the Bash command)
    failed: bool = False  # tool error / non-zero exit / is_error


_TOOL_NAME_KEYS = ("tool_name", "toolName", "tool", "name")
_TOOL_INPUT_KEYS = ("tool_input", "toolInput", "input", "args", "arguments", "params")
_TOOL_RESULT_KEYS = (
    "tool_response",
    "toolResponse",
    "tool_result",
    "toolResult",
    "result",
    "output",
    "response",
)
_ASSISTANT_KEYS = ("last_assistant_message", "assistant", "message", "response", "text", "output")
_NOTE_KEYS = ("compaction", "summary", "compact_summary", "handoff_note", "note")
# Tool inputs worth showing, most telling first; Grep's pattern gets its path appended.
_INPUT_KEYS = (
    "command",
    "cmd",
    "file_path",
    "filePath",
    "notebook_path",
    "pattern",
    "path",
    "url",
    "query",
    "description",
    "prompt",
)
_STATUS_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "exit_status")
# What a failed call looks like when the harness sends no status field:
# Claude Code reports a failed Bash call as text starting "Exit code N" or
# "Error:", and a refused one inside <tool_use_error>.
_FAILURE_TEXT = re.compile(
    r"\A\s*(?:Error: Exit code [1-9]|Exit code [1-9]|Error:|<tool_use_error>)"
)
_FAILURE_STDERR = re.compile(
    r"Traceback \(most recent call last\)|: command not found|^fatal: ", re.MULTILINE
)
_PYTEST_FAILED = re.compile(r"^=+ .*\b\d+ (?:failed|errors?)\b.* =+$", re.MULTILINE)


def note_events(events: Iterable[tuple[str, dict[str, Any]]]) -> list[NoteEvent]:
    """The session log's (kind, payload) pairs, in order, as note events.

    The turn counter moves at each user-prompt; session-start and session-end
    carry nothing a note needs. Payload shapes vary by harness and version, so
    every field is read defensively and an event that cannot be read is skipped.
    """
    out: list[NoteEvent] = []
    turn = 0
    for item in events:
        try:
            kind, payload = item
            if not isinstance(payload, dict):
                payload = {}
            if kind == "user-prompt":
                turn += 1
            out.extend(_events_from(str(kind), payload, turn=max(turn, 1)))
        except Exception:
            # A fold must not fail because one stored event has an odd shape.
            logger.warning("handoff note: skipped an unreadable session event", exc_info=True)
    return out


def _events_from(kind: str, payload: dict[str, Any], *, turn: int) -> list[NoteEvent]:
    if kind == "user-prompt":
        text = _text(payload.get("prompt"))
        return [NoteEvent(kind="prompt", turn=turn, text=text)] if text else []
    if kind == "post-tool-use":
        return [_tool_event(payload, turn=turn)]
    if kind == "stop":
        text = _text(_first(payload, _ASSISTANT_KEYS))
        return [NoteEvent(kind="assistant", turn=turn, text=text)] if text else []
    if kind == "pre-compact":
        text = _text(_first(payload, _NOTE_KEYS))
        return [NoteEvent(kind="note", turn=turn, text=text)] if text else []
    if kind == "injection":
        # A note injected earlier in the session is a prior note for the next fold.
        blocks = payload.get("blocks")
        return [
            NoteEvent(kind="note", turn=turn, text=block["text"])
            for block in (blocks if isinstance(blocks, list) else [])
            if isinstance(block, dict)
            and isinstance(block.get("text"), str)
            and f"## {GOAL}" in block["text"]
            and f"## {OPEN}" in block["text"]
        ]
    return []


def _tool_event(payload: dict[str, Any], *, turn: int) -> NoteEvent:
    name = _text(_first(payload, _TOOL_NAME_KEYS))[:100]
    result = _first(payload, _TOOL_RESULT_KEYS)
    text = _result_text(result)
    error = payload.get("error")
    if isinstance(error, str) and error.strip() and error.strip() not in text:
        text = f"{text}\n{error.strip()}".strip()
    return NoteEvent(
        kind="tool",
        turn=turn,
        text=_middle_out(text, _TOOL_TEXT_CHARS),
        tool_name=name,
        tool_input=_render_input(_first(payload, _TOOL_INPUT_KEYS)),
        failed=_tool_failed(payload, result, text),
    )


def _first(payload: dict[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        value = payload.get(key)
        if value not in (None, "", [], {}):
            return value
    return None


def _text(value: Any, depth: int = 0) -> str:
    """The readable text in a string, a content-part list or a message dict."""
    if depth > 4 or value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(t for t in (_text(v, depth + 1) for v in value) if t).strip()
    if isinstance(value, dict):
        for key in ("content", "text", "message", "summary", "value"):
            if key in value:
                found = _text(value[key], depth + 1)
                if found:
                    return found
    return ""


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result.strip()
    if isinstance(result, list):
        return _text(result)
    if not isinstance(result, dict):
        return "" if result is None else str(result)
    if "stdout" in result or "stderr" in result:
        parts = [result.get("stdout"), result.get("stderr"), result.get("error")]
        return "\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    if isinstance(result.get("file"), dict):  # Claude Code's Read: {"type", "file": {...}}
        return _text(result["file"].get("content"))
    for key in ("content", "output", "result", "text", "message", "error"):
        found = _text(result.get(key))
        if found:
            return found
    return json.dumps(result, sort_keys=True, ensure_ascii=False, default=str)[:2_000]


def _render_input(raw: Any) -> str:
    if isinstance(raw, str):
        return raw.strip()[:1_000]
    if isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        return shlex.join(raw)[:1_000]  # an argv list
    if not isinstance(raw, dict):
        return ""
    for key in _INPUT_KEYS:
        value = raw.get(key)
        if isinstance(value, list) and all(isinstance(part, str) for part in value):
            value = shlex.join(value)
        if isinstance(value, str) and value.strip():
            where = raw.get("path")
            if key == "pattern" and isinstance(where, str) and where.strip():
                return f"{value.strip()} in {where.strip()}"[:1_000]
            return value.strip()[:1_000]
    return json.dumps(raw, sort_keys=True, ensure_ascii=False, default=str)[:300]


def _tool_failed(payload: dict[str, Any], result: Any, text: str) -> bool:
    if payload.get("hook_event_name") == "PostToolUseFailure":
        return True
    known = False  # whether the harness said how the call went
    for source in (payload, result):
        if not isinstance(source, dict):
            continue
        for key in ("is_error", "isError"):
            if isinstance(source.get(key), bool):
                known = True
                if source[key]:
                    return True
        for key in _STATUS_KEYS:
            status = _as_int(source.get(key))
            if status is not None:
                known = True
                if status != 0:
                    return True
        if source.get("success") is False or source.get("interrupted") is True:
            return True
        if isinstance(source.get("error"), str) and source["error"].strip():
            return True
    if known:
        return False
    if _FAILURE_TEXT.match(text) or _PYTEST_FAILED.search(text):
        return True
    stderr = result.get("stderr") if isinstance(result, dict) else None
    return isinstance(stderr, str) and bool(_FAILURE_STDERR.search(stderr))


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None
