"""Error → fix, remembered: a failed tool call and the different call that then worked.

The pairing is the skills generator's trigger (`contexts.flowctx.fix_pairs`:
the same program, or the same file, succeeding later). When the call that
worked differs from the one that failed (`npm ci` → `npm ci
--legacy-peer-deps`), the pair is a lesson in the `lessons` compartment, with
both commands and the error's key line. When the same command simply passed
later, the session's fix memory (`work_items`) already says what changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from contexts.flowctx import NoteEvent, error_line, fix_pairs, tool_kind
from memories.services.work_items import WorkItem

LESSONS = "lessons"
MAX_LESSONS = 2
_COMMAND_CHARS = 160


def _command(event: NoteEvent) -> str:
    flat = " ".join(event.tool_input.split())
    return flat if len(flat) <= _COMMAND_CHARS else flat[: _COMMAND_CHARS - 1] + "…"


def lesson_items(events: Sequence[NoteEvent], *, goal: str = "") -> list[WorkItem]:
    """The lessons a span's tool calls teach, latest last, at most `MAX_LESSONS`."""
    tools = [e for e in events if e.kind == "tool"]
    lessons: dict[tuple[str, str], WorkItem] = {}
    for failed, fixed in fix_pairs(tools):
        if fixed is None or tool_kind(failed) != "shell":
            continue
        before, after = _command(failed), _command(fixed)
        if not before or before == after or (before, after) in lessons:
            continue
        error = error_line(failed.text).rstrip(" .")
        text = f"Lesson: `{before}` failed" + (f" with {error}" if error else "")
        text += f"; `{after}` worked instead."
        if goal:
            text += f" Task: {goal}."
        lessons[(before, after)] = WorkItem(kind="lesson", text=text, compartment=LESSONS)
    return list(lessons.values())[-MAX_LESSONS:]
