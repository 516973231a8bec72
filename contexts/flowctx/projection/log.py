"""Logs: lines alike but for their digits shown once with a count; warnings and errors always."""

from __future__ import annotations

import re

from contexts.flowctx.projection.lines import (
    _last_line,
    _line_numbers,
    _padded,
    _Picker,
    _render_lines,
)

# Warning and error lines; several patterns, each opening with a literal (see
# `_line_numbers`). `rror:` is `error:` and `Error:`, `arning:` the same for warnings.
_ALARMS = (
    re.compile(r"(?:WARN|ERR|CRITICAL|FATAL|SEVERE|PANIC|EMERG|ALERT)"),
    re.compile(r"rror[ \t]*:"),
    re.compile(r"arning[ \t]*:"),
    re.compile(r"\n[ \t]*(?:Traceback|File \"|(?:[\w.]+\.)?\w*(?:Error|Exception)\b|\*\*\*)"),
)
_LOG_WINDOW = 5
_TIMES = "\N{MULTIPLICATION SIGN}"


def _project_log(text: str, *, limit: int, exit_code: int | None) -> str:
    """Lines identical once digits are blanked are one template, shown once with its
    count; every warning and error template is kept, then the ends, then the commonest."""
    lines = text.split("\n")
    # Templates are the UTF-8 bytes without their digits: bytes.translate runs at memory
    # speed where a regex substitution costs 20 ms per megabyte, and neither touches a
    # newline, so templates and lines stay aligned.
    raw = text.encode("utf-8", "surrogatepass")
    normalized = raw.translate(None, b"0123456789").split(b"\n")
    templates: dict[bytes, list[int]] = {}  # template → [first line, count]
    for index, template in enumerate(normalized):
        seen = templates.get(template)
        if seen is None:
            templates[template] = [index, 1]
        else:
            seen[1] += 1
    firsts = {first: count for first, count in templates.values()}
    picker = _Picker(lines, limit)
    # A template's first line stands for all its lines, alarming ones included.
    alarming = (templates[normalized[i]][0] for i in _line_numbers(_padded(text), *_ALARMS))
    picker.take_all(alarming, force=True)
    picker.take_all(_last_line(text), force=True)
    picker.windows(head=_LOG_WINDOW, tail=_LOG_WINDOW)
    picker.take_all(sorted(firsts, key=lambda i: -firsts[i]))
    notes = {
        i: f"({_TIMES}{count})"
        for i, count in firsts.items()
        if count > 1 and i in picker.chosen and lines[i].strip()
    }
    return _render_lines(lines, picker.chosen, notes)
