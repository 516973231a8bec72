"""Engineer handoff notes: older session history folded into six fixed sections.

A generic summary keeps the direction that worked and drops the routes that
were ruled out, and it paraphrases exact strings (a commit hash, a session id,
a function name) so that a later reference to them goes wrong. A handoff note
keeps both on purpose: failed approaches get their own section, identifiers and
paths are copied verbatim.

Two builders write the same format. `note_extractive` needs no model and is
deterministic (same events, byte-identical note), so it is always available
and keeps a KV-cache prefix stable; `note_llm` asks the configured LLM, given
the extractive note as a draft so nothing mechanical is lost. `note_build`
picks the LLM when there is one and falls back to the extractive note.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contexts.flowctx.llm import LlmConfig, LlmError, llm_complete

logger = logging.getLogger(__name__)

SECTIONS = (
    "TASK / GOAL",
    "WORKING APPROACHES",
    "FAILED APPROACHES",
    "KEY IDENTIFIERS",
    "FILE ARTIFACTS",
    "OPEN STATE",
)
GOAL, WORKING, FAILED, IDENTIFIERS, FILES, OPEN = SECTIONS
NONE = "(none)"

# Bounds: a fold of ~40,000 tokens becomes a note of about a thousand.
_NOTE_CHARS = 4_000
_SECTION_LINES = 15
_LINE_CHARS = 220
_GOAL_CHARS = 600
_GOAL_LINES = 8
_EARLIER_REQUESTS = 5
# A single tool output is kept up to this much; the rest of a 5 MB log adds
# nothing a note could use and only slows the pattern scans down.
_TOOL_TEXT_CHARS = 20_000
# How much of the session the LLM is shown (about 12,000 tokens).
_LLM_TRANSCRIPT_CHARS = 48_000
_LLM_MAX_TOKENS = 2_048


@dataclass(frozen=True)
class NoteEvent:
    # "prompt" | "tool" | "assistant" | "note" (a prior handoff note / compaction summary)
    kind: str
    turn: int  # user-turn number the event belongs to (1-based)
    text: str  # the prompt, the tool result text, the assistant text, or the prior note
    tool_name: str = ""
    tool_input: str = ""  # compact rendering of tool_input (e.g. the Bash command)
    failed: bool = False  # tool error / non-zero exit / is_error


# --- session log → events ---------------------------------------------------------------------

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


# --- reading and writing the note format ------------------------------------------------------

_HEADING_MARK = re.compile(r"^\s{0,3}(#{1,6})\s*(.*?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s{0,3}\*\*(.+?)\*\*\s*:?\s*$")
_EMPTY_BODIES = {"", "(none)", "none", "- (none)", "-", "n/a", "(empty)", "- none"}
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"[^A-Z]+", " ", title.upper()).split())


_SECTION_KEYS = {_title_key(name): name for name in SECTIONS}


def _section_for(title: str) -> str | None:
    key = _title_key(re.sub(r"^\s*\d+[.)]\s*", "", title))
    for section_key, name in _SECTION_KEYS.items():
        if key == section_key or key.startswith(section_key + " "):
            return name
    return None


def _parse(text: str) -> dict[str, str]:
    """The sections found in `text` (present ones only), bodies stripped."""
    text = _THINKING.sub("", text).strip()
    fenced = re.fullmatch(r"```[\w-]*\n(.*)\n```", text, re.DOTALL)
    if fenced:  # a model that wrapped the whole note in a code block
        text = fenced.group(1).strip()
    found: dict[str, list[str]] = {}
    current: str | None = None
    fenced_block = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced_block = not fenced_block
        if fenced_block or line.lstrip().startswith("```"):
            if current is not None:
                found[current].append(line.rstrip())
            continue
        marked = _HEADING_MARK.match(line)
        bold = _BOLD_HEADING.match(line)
        title = marked.group(2) if marked else bold.group(1) if bold else None
        if title is None and line.strip().rstrip(":").isupper():
            title = line.strip().rstrip(":")  # a bare "TASK / GOAL:" line
        section = _section_for(title) if title else None
        if section is not None:
            if section in found:
                raise ValueError(f"the section {section!r} appears twice")
            found[section] = []
            current = section
        elif marked and len(marked.group(1)) == 2 and current is not None:
            raise ValueError(
                f"unexpected heading {line.strip()!r}: a note has only the six sections"
            )
        elif current is not None:
            found[current].append(line.rstrip())
        # Anything before the first section is a model's preamble ("Here is the
        # note:"), not part of the note.
    if not found:
        raise ValueError("no handoff-note sections found (expected headings like '## TASK / GOAL')")
    bodies = {}
    for name, lines in found.items():
        body = "\n".join(lines).strip("\n").strip()
        bodies[name] = "" if body.lower() in _EMPTY_BODIES else body
    return bodies


def note_sections(text: str) -> dict[str, str]:
    """The six section bodies of a note, "" for an empty or missing one.

    Raises ValueError when the text cannot be read as a note.
    """
    found = _parse(text)
    return {name: found.get(name, "") for name in SECTIONS}


def note_normalise(text: str) -> str:
    """`text` as a canonical note: the six `## SECTION` headings in order, `(none)` for
    an empty one. Raises ValueError when the text cannot be read as a note."""
    return _render({name: _lines(body) for name, body in note_sections(text).items()})


def _lines(body: str) -> list[str]:
    return [line.rstrip() for line in body.strip().splitlines()]


def _render(sections: dict[str, list[str]]) -> str:
    parts = []
    for name in SECTIONS:
        body = "\n".join(sections.get(name) or []).strip()
        parts.append(f"## {name}\n{body or NONE}")
    return "\n\n".join(parts)


def _fit(sections: dict[str, list[str]]) -> dict[str, list[str]]:
    """The note within its bounds: lines per section, characters per line and in all.

    Where lines must go, the oldest approaches and state go first (the last
    lines are the latest) and the lowest-ranked identifiers and files go first
    (those lists are ranked, best first).
    """
    fitted: dict[str, list[str]] = {}
    for name in SECTIONS:
        lines = [line for line in sections.get(name) or [] if name == GOAL or line.strip()]
        limit = _GOAL_CHARS if name == GOAL else _LINE_CHARS + 80
        lines = [line if len(line) <= limit else _clip(line, limit) for line in lines]
        if len(lines) > _SECTION_LINES:
            ranked = name in (IDENTIFIERS, FILES)
            lines = lines[:_SECTION_LINES] if ranked else lines[-_SECTION_LINES:]
        fitted[name] = lines
    while len(_render(fitted)) > _NOTE_CHARS:
        trimmable = [n for n in SECTIONS if len(fitted[n]) > 1 or (n != GOAL and fitted[n])]
        if not trimmable:
            break
        longest = max(trimmable, key=lambda n: (sum(len(x) for x in fitted[n]), -SECTIONS.index(n)))
        if longest in (IDENTIFIERS, FILES, GOAL):
            fitted[longest] = fitted[longest][:-1]
        else:
            fitted[longest] = fitted[longest][1:]
    return fitted


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str, limit: int) -> str:
    return _clip(" ".join(text.split()), limit)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _middle_out(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return (
        f"{text[:head]}\n[… {len(text) - limit} characters left out …]\n{text[-(limit - head) :]}"
    )


# --- the extractive note ----------------------------------------------------------------------

_SHELL_TOOLS = {"bash", "shell", "sh", "exec", "execute", "run", "terminal", "command"} | {
    "run_command",
    "execute_command",
    "run_shell_command",
}
_EDIT_TOOLS = {"edit", "multiedit", "notebookedit", "edit_file", "apply_patch"} | {
    "str_replace",
    "str_replace_editor",
    "str_replace_based_edit_tool",
}
_WRITE_TOOLS = {"write", "write_file", "create_file"}
_READ_TOOLS = {"read", "read_file", "view", "view_file", "notebookread", "open_file"}
# Commands that only look around; they are exploration, not an approach.
_INSPECT_VERBS = (
    {"ls", "ll", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "rg", "ag"}
    | {"find", "fd", "pwd", "echo", "printf", "wc", "which", "type", "tree", "file", "stat"}
    | {"du", "df", "env", "printenv", "awk", "sort", "uniq", "cut", "jq", "diff", "true", "cd"}
    | {"sleep", "date", "whoami", "git status", "git diff", "git log", "git show", "git branch"}
    | {"git blame", "git grep", "git rev-parse", "git remote"}
)
_HEARTBEATS = (
    "continue working toward the active session goal",
    "continue from where you left off",
)


@dataclass
class _Attempt:
    """One command (or edit) as it went over the span."""

    label: str  # as it worked: "`pytest -q`", "Edited `x.py`"
    failed_label: str  # as it failed: "`pytest -q`", "Edit `x.py`"
    order: int = 0  # index of its latest run
    failures: list[int] = field(default_factory=list)
    successes: list[int] = field(default_factory=list)
    error: str = ""  # the latest failure's error line
    outcome: str = ""  # the latest success's summary line


def note_extractive(events: Sequence[NoteEvent]) -> str:
    """A handoff note built from the events alone: deterministic, no model."""
    session = [e for e in events if e.kind != "note"]
    priors = [e.text for e in events if e.kind == "note" and e.text.strip()]
    attempts = _attempts(session)
    found = _Found()
    for prior in priors:
        try:
            _parse(prior)
        except ValueError:
            # A harness's own compaction summary, free text: its identifiers and
            # paths still count, and its gist joins the goal.
            found.scan(prior, rank=1, weak=True)
    _scan_session(session, found)
    sections = {
        GOAL: _goal_lines(session, priors),
        WORKING: _working_lines(attempts),
        FAILED: _failed_lines(attempts),
        IDENTIFIERS: found.identifier_lines(),
        FILES: found.file_lines(),
        OPEN: _open_lines(session, attempts),
    }
    # Newest prior first, so each older one lands before it: the result reads
    # oldest to newest, as the session did.
    answered = any(e.kind == "prompt" for e in session)
    for prior in reversed(priors):
        try:
            sections = _merge(note_sections(prior), sections, answered=answered)
        except ValueError:
            continue
    return _render(_fit(sections))


def _is_request(text: str) -> bool:
    lowered = text.strip().lower()
    return not lowered.startswith("<") and not lowered.startswith(_HEARTBEATS)


def _is_substantial(text: str) -> bool:
    return len(text) >= 20 or len(text.split()) >= 4


def _goal_lines(session: Sequence[NoteEvent], priors: Sequence[str]) -> list[str]:
    requests = [e.text for e in session if e.kind == "prompt" and _is_request(e.text)]
    lines: list[str] = []
    substantial = [r for r in requests if _is_substantial(r)]
    if substantial:
        goal = substantial[-1]
        # No blank lines: a blank line is where the goal ends and the list of
        # earlier requests begins, which is how a merge tells them apart.
        lines = [x for x in _clip(goal, _GOAL_CHARS).splitlines() if x.strip()][:_GOAL_LINES]
        later = requests[max(i for i, r in enumerate(requests) if r == goal) + 1 :]
        if later:  # "yes", "go on": the goal stands, but the last word is the user's
            lines.append(f"Latest user message: {_one_line(later[-1], 160)}")
        earlier: list[str] = []
        seen = {_one_line(goal, 160)}
        for request in reversed(substantial[:-1]):
            gist = _one_line(request, 160)
            if gist not in seen and len(earlier) < _EARLIER_REQUESTS:
                seen.add(gist)
                earlier.append(f"- {gist}")
        if earlier:
            lines += ["", "Earlier requests:", *reversed(earlier)]
    elif requests:
        lines = [_one_line(requests[-1], _GOAL_CHARS)]
    for prior in priors:
        try:
            _parse(prior)
        except ValueError:
            lines += ["", f"Earlier summary: {_one_line(prior, _GOAL_CHARS)}"]
    return lines


def tool_kind(event: NoteEvent) -> str:
    name = event.tool_name.lower()
    name = name.rsplit("__", 1)[-1]  # mcp__server__tool
    if name in _SHELL_TOOLS:
        return "shell"
    if name in _EDIT_TOOLS:
        return "edit"
    if name in _WRITE_TOOLS:
        return "write"
    if name in _READ_TOOLS:
        return "read"
    return "other"


def is_inspection(command: str) -> bool:
    segments = [s for s in re.split(r"&&|\|\||[;|\n]", command) if s.strip()]
    if not segments:
        return True
    for segment in segments:
        words = [w for w in segment.split() if not re.match(r"^\w+=", w)]
        while words and words[0] in ("sudo", "time", "command", "nohup"):
            words = words[1:]
        if not words:
            continue
        verb = words[0].rsplit("/", 1)[-1]
        if verb == "git" and len(words) > 1:
            verb = f"git {words[1]}"
        if verb == "sed" and not any(w.startswith("-i") for w in words[1:]):
            continue
        if verb not in _INSPECT_VERBS:
            return False
    return True


def _attempts(session: Sequence[NoteEvent]) -> dict[tuple[str, str], _Attempt]:
    attempts: dict[tuple[str, str], _Attempt] = {}
    for index, event in enumerate(session):
        if event.kind != "tool":
            continue
        kind = tool_kind(event)
        target = event.tool_input
        shown = f" `{_one_line(_first_line(target), 140)}`" if target else ""
        if kind == "shell":
            label = failed_label = shown.strip()
        elif kind in ("edit", "write"):
            label = ("Edited" if kind == "edit" else "Wrote") + shown
            failed_label = ("Edit" if kind == "edit" else "Write") + shown
        elif event.failed:
            label = failed_label = (event.tool_name or "tool") + shown
        else:
            continue  # reads, searches and other lookups: exploration
        attempt = attempts.setdefault(
            (kind, target), _Attempt(label=label, failed_label=failed_label)
        )
        attempt.order = index
        if event.failed:
            attempt.failures.append(index)
            attempt.error = error_line(event.text)
        else:
            attempt.successes.append(index)
            attempt.outcome = _outcome_line(event.text) if kind == "shell" else ""
    return attempts


_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::.*)?$"
)
_ERRORISH = re.compile(
    r"\b(?:error|errors|exception|failed|failure|fatal|not found|no such|denied|cannot|"
    r"can't|could not|unable|invalid|refused|timed out|panic)\b",
    re.IGNORECASE,
)


def error_line(text: str) -> str:
    """The one line that says why a call failed."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:  # pytest's short summary names the test and the error
        if line.startswith(("FAILED ", "ERROR ")) and " - " in line:
            return _one_line(line, 160)
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if exceptions:
        return _one_line(re.sub(r"^E\s+", "", exceptions[-1]), 160)
    for line in lines:
        if _ERRORISH.search(line) and not line.startswith("Traceback"):
            return _one_line(line, 160)
    return _one_line(lines[0], 160) if lines else ""


_SUMMARY_WORDS = re.compile(
    r"\b(?:passed|ok|success\w*|succeeded|done|built|installed|compiled|created|wrote|"
    r"written|finished|completed?|changed|insertions?|deletions?|updated|applied|migrated|"
    r"no issues|all checks passed)\b",
    re.IGNORECASE,
)


def _outcome_line(text: str) -> str:
    """The last line of a successful run, when it reads like a summary ("12 passed")."""
    lines = [line.strip(" =") for line in text.splitlines() if line.strip(" =")]
    if lines and len(lines[-1]) <= 120 and _SUMMARY_WORDS.search(lines[-1]):
        return _one_line(lines[-1], 100)
    return ""


def _working_lines(attempts: dict[tuple[str, str], _Attempt]) -> list[str]:
    lines = []
    for (kind, target), attempt in sorted(attempts.items(), key=lambda kv: kv[1].order):
        if not attempt.successes or (kind == "shell" and is_inspection(target)):
            continue
        line = f"- {attempt.label}"
        if attempt.outcome:
            line += f" → {attempt.outcome}"
        if len(attempt.successes) > 1:
            line += f" ({len(attempt.successes)} times)"
        if attempt.failures and attempt.failures[0] < attempt.successes[-1]:
            line += " (worked after failing earlier)"
        lines.append(line)
    return lines


def _failed_lines(attempts: dict[tuple[str, str], _Attempt]) -> list[str]:
    lines = []
    failed = [a for a in attempts.values() if a.failures]
    for attempt in sorted(failed, key=lambda a: a.failures[-1]):
        line = f"- {attempt.failed_label}"
        if attempt.error:
            line += f" → {attempt.error}"
        if len(attempt.failures) > 1:
            line += f" ({len(attempt.failures)} times)"
        if attempt.successes and attempt.successes[-1] > attempt.failures[-1]:
            line += " (fixed later)"
        lines.append(line)
    return lines


def _open_lines(
    session: Sequence[NoteEvent], attempts: dict[tuple[str, str], _Attempt]
) -> list[str]:
    if not session:
        return []
    last_turn = max(e.turn for e in session)
    lines = []
    for attempt in sorted(attempts.values(), key=lambda a: a.order):
        if not attempt.failures:
            continue
        recent = session[attempt.failures[-1]].turn >= last_turn - 1
        resolved = bool(attempt.successes) and attempt.successes[-1] > attempt.failures[-1]
        if recent and not resolved:
            error = f" → {attempt.error}" if attempt.error else ""
            lines.append(f"- Unresolved: {attempt.failed_label}{error}")
    last_prompt = max((i for i, e in enumerate(session) if e.kind == "prompt"), default=-1)
    replies = [e for e in session[last_prompt + 1 :] if e.kind == "assistant"]
    if replies:
        reply = replies[-1].text
        gist = re.sub(r"^[#>*\-\s]+", "", _first_line(reply))
        gist = re.split(r"(?<=[.!?])\s+", gist, maxsplit=1)[0]
        if gist:
            lines.append(f"- Where it stopped: {_one_line(gist, 200)}")
        sentences = re.split(r"(?<=[.!?])\s+|\n+", reply)
        questions = [s.strip(" -*>#") for s in sentences if s.strip().endswith("?")]
        for question in [q for q in questions if len(q) >= 8][:3]:
            lines.append(f"- Open question: {_one_line(question, 200)}")
        todos = [
            s
            for s in reply.splitlines()
            if re.match(r"^\s*(?:[-*]\s*)?(?:TODO|Next( step)?s?)\b", s)
        ]
        for todo in todos[:3]:
            lines.append(f"- {_one_line(todo.strip(' -*'), 200)}")
    return lines


# --- identifiers and files --------------------------------------------------------------------

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HASH = re.compile(r"(?<![\w-])[0-9a-f]{7,40}(?![\w-])")
_SESSION_ID = re.compile(
    r"\bsession[ _-]?id\b[\"'`]?\s*[:=]?\s*[\"'`]?([A-Za-z0-9][\w.:-]{2,80})", re.IGNORECASE
)
_PREFIXED_ID = re.compile(
    r"\b(?:sess|ses|session|run|req|msg|toolu|call|chatcmpl|job|trace|conv|thread)[-_]"
    r"[A-Za-z0-9][\w-]{5,80}\b"
)
_NODE_ID = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.py::[^\s'\"`;,()]+")
_ERROR_NAME = re.compile(
    r"\b(?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Interrupt|Warning)\b"
)
_SCOPED = re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+\b")
_DOTTED_CALL = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\)|(?=\())")
_BARE_CALL = re.compile(r"\b[A-Za-z_]\w*\(\)")
_SNAKE = re.compile(r"\b_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2}\b")
_UPPER_SNAKE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_LOWER_CAMEL = re.compile(r"\b[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_TRACEBACK_FILE = re.compile(r"File \"([^\"]+)\", line (\d+)")
_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|mjs|cjs|json|jsonl|yaml|yml|toml|ini|cfg|conf|md|rst|txt|html|"
    "css|scss|sql|sh|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|lock|xml|csv|ipynb|vue|"
    "svelte|proto|tf|env|log|patch|diff"
)
_PATH = re.compile(
    r"(?<![\w.~/@-])("
    r"(?:~|\.{1,2})/(?:[\w.@+-]+/)*[\w.@+-]+"  # ./x, ~/x
    r"|/(?:[\w.@+-]+/)+[\w.@+-]+"  # /abs/path (one segment would catch "/compact")
    r"|(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}"  # dir/file.ext
    rf"|[\w@+-][\w.@+-]*\.(?:{_EXTENSIONS})"  # file.ext
    r")(?::(\d+))?(?![\w/])"
)
_NOISE_PATHS = re.compile(
    r"site-packages|dist-packages|node_modules|/\.venv/|^\.venv/|/venv/|__pycache__|/\.git/|"
    r"^/(?:usr|bin|sbin|lib|lib64|proc|sys|dev)(?:/|$)|<frozen"
)

# Per kind of identifier: how many a note keeps, in the order they are listed.
_IDENTIFIER_KINDS = (("ids", 8), ("commits", 8), ("tests", 6), ("errors", 8), ("symbols", 24))
_FILE_ACTIONS = ("created", "edited", "read", "mentioned")


@dataclass
class _FileSeen:
    rank: int
    first: int
    actions: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)


@dataclass
class _Found:
    """Identifiers and paths seen so far, each with its best rank and first sighting."""

    identifiers: dict[str, dict[str, tuple[int, int]]] = field(
        default_factory=lambda: {kind: {} for kind, _ in _IDENTIFIER_KINDS}
    )
    files: dict[str, _FileSeen] = field(default_factory=dict)
    counter: int = 0

    def _add_identifier(self, kind: str, token: str, rank: int) -> None:
        token = token.strip().rstrip(".:")
        if len(token) < 3 or len(token) > 120:
            return
        for other, listed in self.identifiers.items():
            if other != kind and token in listed:
                return  # one token, one kind: a session id is not also a symbol
        bucket = self.identifiers[kind]
        self.counter += 1
        if token in bucket:
            bucket[token] = (min(bucket[token][0], rank), bucket[token][1])
        else:
            bucket[token] = (rank, self.counter)

    def add_file(self, path: str, *, rank: int, action: str, line: str | None = None) -> None:
        path = path.rstrip(".,:;)'\"`")
        if not path or len(path) > 200 or _NOISE_PATHS.search(path) or path in ("/", ".", ".."):
            return
        self.counter += 1
        seen = self.files.setdefault(path, _FileSeen(rank=rank, first=self.counter))
        seen.rank = min(seen.rank, rank)
        seen.actions.add(action)
        if line and line not in seen.lines and len(seen.lines) < 3:
            seen.lines.append(line)

    def scan(self, text: str, *, rank: int, weak: bool, hashes: bool = True) -> None:
        """Take identifiers and paths from `text`. Strong patterns (ids, test ids,
        error names, and commit hashes unless `hashes` is off) apply to all text;
        `weak` adds the name-shaped ones, which in a file's content or a long log
        would catch every variable."""
        text = _URL.sub(" ", text)
        for match in _TRACEBACK_FILE.finditer(text):
            self.add_file(match.group(1), rank=rank + 1, action="mentioned", line=match.group(2))
        for match in _NODE_ID.finditer(text):
            self._add_identifier("tests", match.group(0).rstrip(".:"), rank)
            self.add_file(match.group(0).split("::", 1)[0], rank=rank + 1, action="mentioned")
        text = _NODE_ID.sub(" ", text)
        for match in _PATH.finditer(text):
            self.add_file(match.group(1), rank=rank + 1, action="mentioned", line=match.group(2))
        text = _PATH.sub(" ", text)
        for match in _UUID.finditer(text):
            self._add_identifier("ids", match.group(0), rank)
        text = _UUID.sub(" ", text)
        for match in _SESSION_ID.finditer(text):
            if re.search(r"\d", match.group(1)):
                self._add_identifier("ids", match.group(1), rank)
        for match in _PREFIXED_ID.finditer(text):
            if re.search(r"\d", match.group(0)):
                self._add_identifier("ids", match.group(0), rank)
        for match in _HASH.finditer(text) if hashes else ():
            token = match.group(0)
            if re.search(r"\d", token) and re.search(r"[a-f]", token):
                self._add_identifier("commits", token, rank)
        for match in _ERROR_NAME.finditer(text):
            self._add_identifier("errors", match.group(0), rank)
        if not weak:
            return
        text = _ERROR_NAME.sub(" ", text)
        for pattern in (_SCOPED, _DOTTED_CALL, _BARE_CALL):
            for match in pattern.finditer(text):
                self._add_identifier("symbols", match.group(0), rank)
            text = pattern.sub(" ", text)
        for pattern in (_SNAKE, _UPPER_SNAKE, _CAMEL, _LOWER_CAMEL):
            for match in pattern.finditer(text):
                self._add_identifier("symbols", match.group(0), rank)

    def identifier_lines(self) -> list[str]:
        lines = []
        for kind, limit in _IDENTIFIER_KINDS:
            bucket = self.identifiers[kind]
            tokens: list[str] = []
            for token in sorted(bucket, key=lambda t: bucket[t]):
                if len(tokens) == limit:
                    break
                # `9c1e4b7` from git log and `9c1e4b7a2f` from the user are one
                # commit; the better-ranked spelling is kept.
                if kind == "commits" and any(
                    t.startswith(token) or token.startswith(t) for t in tokens
                ):
                    continue
                tokens.append(token)
            line = f"- {kind}:"
            for token in tokens:
                piece = f" `{token}`"
                if len(line) + len(piece) + 1 > _LINE_CHARS and not line.endswith(":"):
                    lines.append(line.rstrip(","))
                    line = f"- {kind}:"
                line += piece + ","
            if not line.endswith(":"):
                lines.append(line.rstrip(","))
        return lines

    def file_lines(self) -> list[str]:
        files = dict(self.files)
        # `importer/x.py` in a traceback is `/work/app/importer/x.py` from Read:
        # a relative path that ends an absolute one joins it.
        for path in list(files):
            if path.startswith(("/", "~")):
                continue
            whole = sorted(p for p in files if p.startswith(("/", "~")) and p.endswith("/" + path))
            if whole:
                seen, into = files.pop(path), files[whole[0]]
                into.rank, into.first = min(into.rank, seen.rank), min(into.first, seen.first)
                into.actions |= seen.actions
                into.lines = (into.lines + [n for n in seen.lines if n not in into.lines])[:3]
        ranked = sorted(files.items(), key=lambda kv: (kv[1].rank, kv[1].first))
        lines = [_file_line(path, seen.actions, seen.lines) for path, seen in ranked]
        if len(lines) > _SECTION_LINES:
            rest = len(lines) - (_SECTION_LINES - 1)
            lines = [*lines[: _SECTION_LINES - 1], f"- … and {rest} more files"]
        return lines


def _file_line(path: str, actions: Iterable[str], lines: Sequence[str]) -> str:
    chosen = [a for a in _FILE_ACTIONS if a in set(actions)]
    if len(chosen) > 1:
        chosen = [a for a in chosen if a != "mentioned"]
    line = f"- `{path}` — {', '.join(chosen or ['mentioned'])}"
    numbers = sorted(set(lines), key=int)
    if numbers:
        line += f"; line {numbers[0]}" if len(numbers) == 1 else f"; lines {', '.join(numbers)}"
    return line


def _scan_session(session: Sequence[NoteEvent], found: _Found) -> None:
    for event in session:
        if event.kind == "prompt":
            found.scan(event.text, rank=0, weak=True)
        elif event.kind == "assistant":
            found.scan(event.text, rank=2, weak=True)
        elif event.kind == "tool":
            kind = tool_kind(event)
            if kind in ("edit", "write", "read") and re.fullmatch(r"\S{1,200}", event.tool_input):
                action = {"edit": "edited", "write": "created", "read": "read"}[kind]
                if event.failed:
                    action = "mentioned"
                found.add_file(event.tool_input, rank=0 if kind != "read" else 1, action=action)
            else:
                # `cd /work/app` says where, not what: the directory is no artifact.
                command = re.sub(r"(?:^|(?<=[;&|]))\s*cd\s+\S+", " ", event.tool_input)
                found.scan(command, rank=1, weak=True)
            if event.failed:
                error_lines = [
                    line
                    for line in event.text.splitlines()
                    if _EXCEPTION_LINE.match(line.strip()) or line.strip().startswith('File "')
                ]
                found.scan("\n".join([error_line(event.text), *error_lines]), rank=1, weak=True)
            # Logs are full of hex (addresses, digests, request ids); only git's
            # output is trusted to hold commit hashes.
            git = tool_kind(event) == "shell" and re.search(r"\bgit\b", event.tool_input)
            found.scan(event.text, rank=3, weak=False, hashes=bool(git))


# --- merging a prior note ---------------------------------------------------------------------


def _line_key(section: str, line: str) -> str:
    text = " ".join(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).split())
    if section in (WORKING, FAILED):
        # The same command is the same approach: the newer line, with its newer
        # outcome and counts, replaces the older one.
        text = re.sub(
            r"(?: \((?:\d+ times|fixed later|worked after failing earlier)\))+$", "", text
        )
        text = text.split(" → ", 1)[0]
    if section == OPEN:
        text = re.sub(r"^(?:Unresolved|Where it stopped|Open question): ", "", text)
    return text


_REPLY_STATE = ("Where it stopped", "Open question", "TODO", "Next")


def _merge(
    prior: dict[str, str], new: dict[str, list[str]], *, answered: bool
) -> dict[str, list[str]]:
    """`new` with a prior note folded in, section by section, no line twice.

    `answered`: the span after the prior note has a user request in it.
    """
    merged: dict[str, list[str]] = {GOAL: _merge_goal(_lines(prior[GOAL]), new[GOAL])}
    merged[IDENTIFIERS] = _merge_identifiers(_lines(prior[IDENTIFIERS]), new[IDENTIFIERS])
    merged[FILES] = _merge_files(_lines(prior[FILES]), new[FILES])
    worked = {_line_key(WORKING, line) for line in new[WORKING]}
    for name in (WORKING, FAILED, OPEN):
        older = [line for line in _lines(prior[name]) if line.strip()]
        if name == OPEN:
            # A prior failure that has since worked is no longer open, and the
            # prior reply's questions were answered by the user's next request.
            older = [
                line
                for line in older
                if _line_key(OPEN, line).split(" → ", 1)[0] not in worked
                and not (line.lstrip("- ").startswith(_REPLY_STATE) and answered)
            ]
        newer_keys = {_line_key(name, line) for line in new[name]}
        kept: list[str] = []
        seen: set[str] = set()
        for line in older:
            key = _line_key(name, line)
            if key not in newer_keys and key not in seen:
                seen.add(key)
                if name == FAILED and key in worked and not line.endswith("(fixed later)"):
                    line += " (fixed later)"  # the span since the prior note fixed it
                kept.append(line)
        merged[name] = kept + new[name]
    return merged


def _split_goal(lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the current goal's lines, the other lines: earlier requests and summaries)."""
    lines = list(lines)
    for index, line in enumerate(lines):
        if line.strip() == "" or line.startswith(("Earlier requests:", "Earlier summary:")):
            return lines[:index], [x for x in lines[index:] if x.strip()]
    return lines, []


def _merge_goal(prior: Sequence[str], new: Sequence[str]) -> list[str]:
    prior_goal, prior_rest = _split_goal(prior)
    prior_goal = [line for line in prior_goal if not line.startswith("Latest user message:")]
    new_goal, new_rest = _split_goal(new)
    if not new_goal:  # a span with no request in it: the prior goal still stands
        new_goal, prior_goal = prior_goal, []
    earlier: list[str] = []
    summaries: list[str] = []
    if prior_goal:
        earlier.append(f"- {_one_line(' '.join(prior_goal), 160)}")
    for line in prior_rest + new_rest:
        if line.startswith("Earlier summary:"):
            summaries.append(line)
        elif line.startswith("- "):
            earlier.append(line)
    current = _one_line(" ".join(new_goal), 160)
    unique = [x for x in dict.fromkeys(earlier) if x[2:] != current][-_EARLIER_REQUESTS:]
    lines = list(new_goal)
    if unique:
        lines += ["", "Earlier requests:", *unique]
    for summary in dict.fromkeys(summaries):
        lines += ["", summary]
    return lines


_GROUPED = re.compile(r"^- ([\w ]+): ((?:`[^`]+`(?:, )?)+)$")
_FILE_LINE = re.compile(r"^- `([^`]+)` — ([a-z, ]+)(?:; lines? ([\d, ]+))?$")


def _merge_identifiers(prior: Sequence[str], new: Sequence[str]) -> list[str]:
    groups: dict[str, list[str]] = {}
    plain: list[str] = []
    for line in [*prior, *new]:
        match = _GROUPED.match(line.strip())
        if match:
            tokens = re.findall(r"`([^`]+)`", match.group(2))
            groups.setdefault(match.group(1), []).extend(tokens)
        elif line.strip() and line not in plain:
            plain.append(line)
    # A token a free-form prior line already carries is not listed again.
    listed = {t for line in plain for t in re.findall(r"`([^`]+)`", line)}
    lines: list[str] = []
    known = [kind for kind, _ in _IDENTIFIER_KINDS]
    for kind in known + sorted(set(groups) - set(known)):
        tokens = [t for t in dict.fromkeys(groups.get(kind, [])) if t not in listed]
        listed.update(tokens)
        line = f"- {kind}:"
        for token in tokens:
            piece = f" `{token}`"
            if len(line) + len(piece) + 1 > _LINE_CHARS and not line.endswith(":"):
                lines.append(line.rstrip(","))
                line = f"- {kind}:"
            line += piece + ","
        if not line.endswith(":"):
            lines.append(line.rstrip(","))
    return lines + plain


def _merge_files(prior: Sequence[str], new: Sequence[str]) -> list[str]:
    entries: dict[str, tuple[set[str], list[str]]] = {}
    plain: list[str] = []
    for line in [*prior, *new]:
        match = _FILE_LINE.match(line.strip())
        if not match:
            if line.strip() and line not in plain and not line.startswith("- … and "):
                plain.append(line)
            continue
        actions, numbers = entries.setdefault(match.group(1), (set(), []))
        actions.update(a.strip() for a in match.group(2).split(","))
        for number in (match.group(3) or "").split(","):
            if number.strip() and number.strip() not in numbers and len(numbers) < 3:
                numbers.append(number.strip())
    # Edited and created files first: they are what the next engineer must not lose.
    changed = sorted(entries, key=lambda path: not entries[path][0] & {"edited", "created"})
    return [_file_line(path, *entries[path]) for path in changed] + plain


# --- the LLM note -----------------------------------------------------------------------------

_SYSTEM_PROMPT = f"""You write engineer handoff notes. A coding agent's older conversation \
is being folded away; the next engineer will read only your note, so it must let them \
continue without redoing work or retrying what already failed.

Write exactly these six sections, with these headings, in this order, and nothing \
before or after them:

## {GOAL}
## {WORKING}
## {FAILED}
## {IDENTIFIERS}
## {FILES}
## {OPEN}

- {GOAL}: what the user wants now; earlier requests in a few words if they differ.
- {WORKING}: what was done and worked (commands, edits, results).
- {FAILED}: every approach that failed and the error it gave, so nobody retries it \
blindly; say when it was fixed later.
- {IDENTIFIERS}: session ids, commit hashes, function and class names, error names, \
test ids, copied character for character in backticks. Never shorten or paraphrase them.
- {FILES}: every file path touched or named, verbatim, with what happened to it.
- {OPEN}: unresolved errors, open questions, the next step.

Use short "- " bullet lines. Write {NONE} for an empty section. Stay under \
{_NOTE_CHARS} characters. When a prior note is given, merge it in: keep its facts \
unless the session superseded them, and do not repeat lines."""


def note_llm(events: Sequence[NoteEvent], *, config: LlmConfig) -> str:
    """A handoff note written by the configured LLM.

    The model gets the session (bounded), any prior notes and the extractive
    note as a draft. Its answer must read as a note with all six sections; one
    repair is asked for otherwise. Raises LlmError when no valid note comes back.
    """
    draft = note_extractive(events)
    priors = [e.text for e in events if e.kind == "note" and e.text.strip()]
    parts = []
    for prior in priors:
        parts.append(f"PRIOR NOTE (merge it in, do not repeat it):\n{_middle_out(prior, 6_000)}")
    parts.append(
        "MECHANICAL DRAFT (complete but crude: improve it, and keep its identifiers "
        f"and paths verbatim):\n{draft}"
    )
    parts.append(f"SESSION (oldest first):\n{_transcript(events)}")
    messages = [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    answer = llm_complete(
        messages=messages, config=config, max_tokens=_LLM_MAX_TOKENS, temperature=0.0
    )
    try:
        return _checked(answer)
    except ValueError as exc:
        problem = str(exc)
    logger.info("handoff note: the LLM's answer was not a note (%s); asking once more", problem)
    messages += [
        {"role": "assistant", "content": _clip(answer, 6_000)},
        {
            "role": "user",
            "content": (
                f"That answer cannot be used: {problem}. Reply with the complete note "
                "again: exactly the six sections "
                f"({', '.join(f'## {name}' for name in SECTIONS)}) in that order, "
                f"{NONE} for an empty one, nothing before or after."
            ),
        },
    ]
    answer = llm_complete(
        messages=messages, config=config, max_tokens=_LLM_MAX_TOKENS, temperature=0.0
    )
    try:
        return _checked(answer)
    except ValueError as exc:
        raise LlmError(f"the LLM did not write a valid handoff note: {exc}") from None


def _checked(answer: str) -> str:
    found = _parse(answer)
    missing = [name for name in SECTIONS if name not in found]
    if missing:
        raise ValueError(f"sections missing: {', '.join(missing)}")
    if not any(found.values()):
        raise ValueError("every section is empty")
    return _render(_fit({name: _lines(found[name]) for name in SECTIONS}))


def _transcript(events: Sequence[NoteEvent]) -> str:
    """The session as the model sees it, within `_LLM_TRANSCRIPT_CHARS`.

    Tool output is cut first (a failure keeps its tail, where the error is);
    if that is not enough, the middle of the span goes, since the draft already
    carries every command and error from it.
    """
    for output_chars in (1_200, 300, 0):
        lines = [_transcript_line(e, output_chars) for e in events if e.kind != "note"]
        text = "\n".join(lines)
        if len(text) <= _LLM_TRANSCRIPT_CHARS:
            return text
    head, tail = _LLM_TRANSCRIPT_CHARS // 3, _LLM_TRANSCRIPT_CHARS * 2 // 3
    return f"{text[:head]}\n[… the middle of the session is left out …]\n{text[-tail:]}"


def _transcript_line(event: NoteEvent, output_chars: int) -> str:
    where = f"[turn {event.turn}]"
    if event.kind == "prompt":
        return f"{where} USER: {_clip(event.text, 2_000)}"
    if event.kind == "assistant":
        return f"{where} ASSISTANT: {_clip(event.text, 1_500)}"
    status = "FAILED" if event.failed else "ok"
    line = f"{where} TOOL {event.tool_name} `{_clip(event.tool_input, 400)}` → {status}"
    if output_chars and event.text:
        text = event.text
        if len(text) > output_chars:
            keep = output_chars // 3
            head, tail = (
                (keep, output_chars - keep) if event.failed else (output_chars - keep, keep)
            )
            text = f"{text[:head]}\n…\n{text[-tail:]}"
        line += "\n  " + text.replace("\n", "\n  ")
    elif not output_chars and event.failed:
        line += f": {error_line(event.text)}"
    return line


def note_build(events: Sequence[NoteEvent], *, config: LlmConfig | None) -> tuple[str, str]:
    """(note, "llm" | "extractive"): the LLM's note when one is configured and
    answers with a valid note, the extractive note otherwise."""
    if config is not None:
        try:
            return note_llm(events, config=config), "llm"
        except LlmError as exc:
            logger.warning("handoff note: LLM unavailable (%s); using the extractive note", exc)
    return note_extractive(events), "extractive"
