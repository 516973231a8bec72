"""Prose: headings as an outline, then the start and the end."""

from __future__ import annotations

from contexts.flowctx.projection.detect import _HEADING
from contexts.flowctx.projection.lines import _line_numbers, _padded, _Picker, _render_lines


def _project_text(text: str, *, limit: int, exit_code: int | None) -> str | None:
    """Headings (markdown, man and pydoc sections) as an outline, then the start and the
    end while they fit. None without headings: plain head/tail then."""
    lines, padded = text.split("\n"), _padded(text)
    headings = _line_numbers(padded, _HEADING)
    if len(headings) < 3:
        return None
    picker = _Picker(lines, limit)
    picker.take_all(headings)
    picker.windows(head=_TEXT_WINDOWS[0], tail=_TEXT_WINDOWS[1])
    return _render_lines(lines, picker.chosen)


_TEXT_WINDOWS = (40, 15)
