"""What of a handoff note is worth finding next week, as memory texts.

Pure and deterministic: the note's sections in, a few short texts out. A
fixed failure becomes one text holding the error's key line, the change that
fixed it and the run that passed; an approach that failed and was left
becomes one; the task with where it ended (what was decided, what was
changed) becomes one. Each names the task in the user's own words, since a
later question names the work ("the flaky retry test"), rarely the command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contexts.flowctx import NoteEvent, tool_kind
from contexts.flowctx.notes import FAILED, GOAL, OPEN, WORKING

# Per note: the task, then fixes before abandoned approaches.
MAX_FIXES = 3
MAX_FAILED = 2
_GOAL_CHARS = 280
_CHANGED_FILES = 4
_COMMIT_CHARS = 600

_MARKS = re.compile(r"\s*\((?:\d+ times|fixed later|worked after failing earlier)\)")
_LINE = re.compile(r"^- (?P<label>.+?)(?: → (?P<detail>.*))?$")
_CHANGE = re.compile(r"^(?:Edited|Wrote) `(?P<path>[^`]+)`")
# A commit's message is the session's own word on what the change was.
_COMMIT = re.compile(r"^`git commit\b[^`]*?\s-\w*m\s*(?P<q>[\"'])(?P<message>[^`]{8,}?)(?P=q)?\s*`")


@dataclass(frozen=True)
class WorkItem:
    kind: str  # "task" | "fix" | "failed" | "lesson"
    text: str
    compartment: str = ""


@dataclass(frozen=True)
class _Line:
    label: str
    detail: str
    fixed: bool  # FAILED: "(fixed later)"; WORKING: "(worked after failing earlier)"


def _lines(body: str) -> list[_Line]:
    out = []
    for raw in body.splitlines():
        raw = raw.strip()
        fixed = "(fixed later)" in raw or "(worked after failing earlier)" in raw
        match = _LINE.match(_MARKS.sub("", raw))
        if match:
            label, detail = match.group("label").strip(), (match.group("detail") or "").strip()
            out.append(_Line(label=label, detail=detail, fixed=fixed))
    return out


def work_goal(body: str) -> str:
    """The task: the goal's first paragraph and the user's latest word, on one line."""
    paragraph = body.strip().split("\n\n", 1)[0]
    words = " ".join(paragraph.split()).rstrip(" .")
    return words if len(words) <= _GOAL_CHARS else words[: _GOAL_CHARS - 1].rstrip() + "…"


def _command(label: str) -> str:
    """The command a failed line names: "Edit `x.py`" → "", "`pytest -q`" → "pytest -q"."""
    match = re.fullmatch(r"`([^`]+)`", label)
    return match.group(1) if match else ""


def _where_it_stopped(body: str) -> str:
    for line in body.splitlines():
        if line.strip().startswith("- Where it stopped:"):
            return line.split(":", 1)[1].strip()
    return ""


def commit_messages(events: Sequence[NoteEvent]) -> list[str]:
    """The messages of the span's `git commit -m` calls that worked, whole (a note's
    line keeps only a command's first 140 characters)."""
    found = []
    for event in events:
        if event.kind == "tool" and not event.failed and tool_kind(event) == "shell":
            command = " ".join(event.tool_input.split())
            match = _COMMIT.match(f"`{command}`")
            if match:
                found.append(match.group("message").strip()[:_COMMIT_CHARS])
    return found


def work_items(sections: dict[str, str], *, commits: Sequence[str] = ()) -> list[WorkItem]:
    """The memory texts a note's sections give, most telling first. `commits`: the
    span's commit messages in full, when the caller read them from the events."""
    goal = work_goal(sections.get(GOAL, ""))
    working = _lines(sections.get(WORKING, ""))
    failed = _lines(sections.get(FAILED, ""))
    changed = [m.group("path") for w in working if (m := _CHANGE.match(w.label))]
    changes = ", ".join(f"`{p}`" for p in changed[-_CHANGED_FILES:])
    task = f" Task: {goal}." if goal else ""
    items: list[WorkItem] = []
    stopped = _where_it_stopped(sections.get(OPEN, ""))
    if not commits:
        commits = [m.group("message").strip() for w in working if (m := _COMMIT.match(w.label))]
    if goal and (changes or stopped or working):
        text = f"Worked on: {goal}."
        if changes:
            text += f" Changed {changes}."
        if commits:
            text += f" Committed: {commits[-1].rstrip(' .…')}."
        if stopped:
            text += f" Outcome: {stopped}"
        items.append(WorkItem(kind="task", text=text))
    fixes = [f for f in failed if f.fixed and _command(f.label)]
    for line in fixes[-MAX_FIXES:]:
        command = _command(line.label)
        passed = next((w for w in working if _command(w.label) == command), None)
        text = f"Fixed a failure of `{command}`"
        text += f": {line.detail}." if line.detail else "."
        if changes:
            text += f" The fix changed {changes}."
        if passed is not None:
            text += f" Then `{command}`" + (f" → {passed.detail}." if passed.detail else " passed.")
        items.append(WorkItem(kind="fix", text=text + task))
    left = [f for f in failed if not f.fixed and _command(f.label)]
    for line in left[-MAX_FAILED:]:
        text = f"Tried `{_command(line.label)}` and it failed"
        text += f": {line.detail}." if line.detail else "."
        items.append(WorkItem(kind="failed", text=text + task))
    return items
