"""What the projectors share: line scans, a line picker under a budget, renderings tried
richest first."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

# Must-keep lines may take a projection up to this many budgets; past it the
# projection is cut like plain text, as the original is one retrieve away.
_HARD_CAP = 4
_LINE_CAP = 400  # one minified line must not eat the budget


def _clip(line: str, width: int = _LINE_CAP) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]}… (+{len(line) - width} chars)"


def _omitted_lines(count: int) -> str:
    return f"... omitted {count} lines ..."


def _head_tail(text: str, limit: int) -> str:
    """Head 60% / tail 30% of a character budget around an omission marker."""
    head_size, tail_size = int(limit * 0.6), int(limit * 0.3)
    if head_size + tail_size >= len(text):
        return text
    head, tail = text[:head_size], text[len(text) - tail_size :]
    # End and start on line breaks when one is near, so no half line is shown.
    cut = head.rfind("\n", int(head_size * 0.8))
    if cut > 0:
        head = head[:cut]
    cut = tail.find("\n", 0, int(tail_size * 0.2))
    if cut >= 0:
        tail = tail[cut + 1 :]
    omitted = len(text) - len(head) - len(tail)
    return f"{head}\n... omitted {omitted} chars ...\n{tail}"


def _padded(text: str) -> str:
    return f"\n{text}\n"


def _scan(padded: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, re.Match[str]]]:
    """(line index, match) for each match of `pattern` in a `_padded` text.

    A match opening with the newline before a line belongs to that line, one
    inside a line to its own: counting the newlines up to one character past
    the start gives both. One C scan instead of a Python loop over every line."""
    newlines, position = 0, 0
    for match in pattern.finditer(padded):
        end = match.start() + 1
        newlines += padded.count("\n", position, end)
        position = end
        yield newlines - 1, match


def _line_numbers(padded: str, *patterns: re.Pattern[str]) -> list[int]:
    """The distinct line indexes, in order, where any of `patterns` matches a `_padded`
    text. Several patterns that each open with a literal scan faster than one
    alternation of them."""
    found: set[int] = set()
    for pattern in patterns:
        found.update(line for line, _ in _scan(padded, pattern))
    return sorted(found)


@dataclass
class _Picker:
    """Chooses lines to keep under a character limit; forced lines pass it."""

    lines: list[str]
    limit: int
    chosen: set[int] = field(default_factory=set)
    used: int = 0

    def take(self, index: int, *, force: bool = False) -> bool:
        """Keeps line `index`; False, keeping nothing, when it would pass the limit."""
        if index in self.chosen:
            return True
        cost = min(len(self.lines[index]), _LINE_CAP) + 1
        if index - 1 not in self.chosen and index + 1 not in self.chosen:
            cost += 24  # a scattered line brings an omission marker along
        if not force and self.used + cost > self.limit:
            return False
        self.chosen.add(index)
        self.used += cost
        return True

    def take_all(self, indexes: Iterable[int], *, force: bool = False) -> None:
        """Keeps lines in the order given, up to the first that does not fit."""
        for index in indexes:
            if not self.take(index, force=force):
                return

    def windows(self, *, head: int, tail: int) -> None:
        """The last lines first (the summary and the latest error live there), then the first."""
        count = len(self.lines)
        self.take_all(range(count - 1, max(count - tail, 0) - 1, -1))
        self.take_all(range(min(head, count)))


def _render_lines(
    lines: list[str], keep: Iterable[int], notes: dict[int, str] | None = None
) -> str:
    out: list[str] = []
    previous = -1
    for index in sorted(keep):
        if index - previous > 1:
            out.append(_omitted_lines(index - previous - 1))
        note = notes.get(index) if notes else None
        out.append(f"{_clip(lines[index])} {note}" if note else _clip(lines[index]))
        previous = index
    if len(lines) - previous > 1:
        out.append(_omitted_lines(len(lines) - previous - 1))
    return "\n".join(out)


def _last_line(text: str) -> list[int]:
    """The index of the last non-blank line (the summary of most commands), if any."""
    body = text.rstrip()
    return [body.count("\n")] if body else []


class _Full(Exception):
    """Raised by `_Writer` when a rendering passes its limit."""


class _Writer:
    def __init__(self, limit: int | None) -> None:
        self.lines: list[str] = []
        self.left = limit

    def add(self, line: str) -> None:
        if self.left is not None:
            self.left -= len(line) + 1
            if self.left < 0:
                raise _Full
        self.lines.append(line)


def _first_fitting(levels: Sequence[Callable[[], Iterator[str]]], limit: int) -> str:
    """The richest rendering that fits; the sparsest one, whole, when none does.

    Renderings are generators stopped at the limit, so trying a rich rendering of a
    megabyte costs only the budget's worth of work."""
    for level in levels[:-1]:
        writer = _Writer(limit)
        try:
            for line in level():
                writer.add(line)
        except _Full:
            continue
        return "\n".join(writer.lines)
    return "\n".join(levels[-1]())
