"""Diffs: commits, changed files and hunk headers always; changed lines while they fit."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from contexts.flowctx.projection.lines import _clip, _first_fitting, _padded

_DIFF_EVENT = re.compile(
    r"""\n(?:(?P<commit>commit\ [0-9a-f]{7,40}\b[^\n]*)
         | (?P<file>diff\ --git\ [^\n]*|---\ [^\n]*\n\+\+\+\ [^\n]*)
         | (?P<hunk>@@\ -\d+(?:,\d+)?\ \+\d+(?:,\d+)?\ @@[^\n]*))""",
    re.X,
)
_DIFF_STAT = re.compile(r" \d+ files? changed")
_FILE_META = ("new file", "deleted file", "rename ", "similarity", "Binary files", "old mode")


@dataclass
class _DiffEvent:
    kind: str  # "commit" | "file" | "hunk"
    header: str
    start: int  # the body: from after the header to the next event
    end: int
    added: int = 0  # a file's counts are the sums over its hunks
    removed: int = 0
    hunks: int = 0


def _diff_events(padded: str) -> list[_DiffEvent]:
    """The commits, files and hunks of a `_padded` diff, with their line counts."""
    events: list[_DiffEvent] = []
    for match in _DIFF_EVENT.finditer(padded):
        kind = match.lastgroup or "hunk"
        # `--- a/x` / `+++ b/x` right after `diff --git` is the same file, not a new one.
        follows_file = bool(events) and events[-1].kind == "file"
        header = match.group(kind)
        if kind == "file" and follows_file and header.startswith("---"):
            continue
        if events:
            events[-1].end = match.start()
        events.append(_DiffEvent(kind, header, match.end() + 1, len(padded)))
    current: _DiffEvent | None = None
    for event in events:
        if event.kind == "hunk":
            event.added = padded.count("\n+", event.start - 1, event.end)
            event.removed = padded.count("\n-", event.start - 1, event.end)
            if current is not None:
                current.added += event.added
                current.removed += event.removed
                current.hunks += 1
        else:
            current = event if event.kind == "file" else None
    return events


def _project_diff(text: str, *, limit: int, exit_code: int | None) -> str | None:
    """Commits, changed files and hunk headers always; changed lines while they fit."""
    padded = _padded(text)
    events = _diff_events(padded)
    if not events:
        return None
    files = [event for event in events if event.kind == "file"]
    commits = sum(1 for event in events if event.kind == "commit")
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    summary = f"{len(files)} files changed, +{added} -{removed}"
    if commits:
        summary = f"{commits} commits, {summary}" if files else f"{commits} commits"

    def commit_lines(event: _DiffEvent) -> Iterator[str]:
        yield event.header
        body = padded[event.start : min(event.end, event.start + 4000)].split("\n")
        # git log indents the message by four spaces; its first line is the subject.
        subject = next((line.strip() for line in body if line.startswith("    ")), "")
        if subject:
            yield f"    {_clip(subject, 160)}"
        yield from (line for line in body if _DIFF_STAT.match(line))  # git log --stat

    def file_lines(event: _DiffEvent) -> Iterator[str]:
        yield event.header
        body = padded[event.start : min(event.end, event.start + 2000)].split("\n")
        yield from (line for line in body if line.startswith(_FILE_META))

    def changed(event: _DiffEvent, most: int | None) -> Iterator[str]:
        shown = 0
        for line in padded[event.start : event.end].split("\n"):
            if line.startswith(("+", "-")):
                if shown == most:
                    yield f"  … +{event.added} -{event.removed} in all"
                    return
                shown += 1
                yield _clip(line, 200)

    def with_hunks(most: int | None) -> Callable[[], Iterator[str]]:
        def render() -> Iterator[str]:
            yield summary
            for event in events:
                if event.kind == "commit":
                    yield from commit_lines(event)
                elif event.kind == "file":
                    yield from file_lines(event)
                elif most == 0:
                    yield f"{event.header} (+{event.added} -{event.removed})"
                else:
                    yield event.header
                    yield from changed(event, most)

        return render

    def files_only() -> Iterator[str]:
        yield summary
        for event in events:
            if event.kind == "commit":
                yield from commit_lines(event)
            elif event.kind == "file":
                yield f"  {_diff_path(event.header)} +{event.added} -{event.removed}"

    levels = [with_hunks(None), with_hunks(12), with_hunks(4), with_hunks(0), files_only]
    return _first_fitting(levels, limit)


def _diff_path(header: str) -> str:
    """The changed file a `diff --git a/x b/y` (or `--- x` / `+++ y`) header names."""
    if header.startswith("diff --git "):
        old, _, new = header[len("diff --git ") :].partition(" b/")
        old = old.removeprefix("a/")
        return new if old == new else f"{new} (from {old})"
    new = header.partition("\n+++ ")[2].split("\t")[0]
    return new.removeprefix("b/")
