"""The extractive note: built from the events alone, deterministic, no model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from contexts.flowctx.notes.events import NoteEvent
from contexts.flowctx.notes.format import (
    _EARLIER_REQUESTS,
    _GOAL_CHARS,
    _GOAL_LINES,
    FAILED,
    FILES,
    GOAL,
    IDENTIFIERS,
    OPEN,
    WORKING,
    _clip,
    _first_line,
    _fit,
    _one_line,
    _parse,
    _render,
    note_sections,
)
from contexts.flowctx.notes.found import _Found, _scan_session
from contexts.flowctx.notes.merge import _merge
from contexts.flowctx.notes.tools import _outcome_line, error_line, is_inspection, tool_kind

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
