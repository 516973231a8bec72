"""Test runs: failing test ids, assertions and the summary always; windows sized by the outcome."""

from __future__ import annotations

import re

from contexts.flowctx.projection.lines import (
    _last_line,
    _line_numbers,
    _padded,
    _Picker,
    _render_lines,
)

# Never dropped: what a reader fixing the failure needs next.
_TEST_MUST = re.compile(
    r"""\n(?:(?:FAILED|FAIL|ERROR|XPASS)\b                # pytest summary, unittest headers
         | E[ \t]                                        # pytest assertion details
         | _{3,}[ \t][^\n]*[ \t]_{3,}(?=\n)              # pytest failure section (the test id)
         | ={3,}[ \t][^\n]*[ \t]={3,}(?=\n)              # pytest sections and final summary
         | [^\s:]+:\d+:[ \t]                             # file.py:12: AssertionError
         | [ \t]*File[ \t]"[^\n]*",[ \t]line[ \t]\d+     # traceback frames
         | [ \t]*(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)\b  # exception lines
         | Traceback[ \t]                                # traceback header
         | Ran[ \t]\d+[ \t]tests?|OK\b                   # unittest summary
         | [ \t]*---[ \t](?:FAIL|PASS):                   # go test
         | test[ \t]result:                              # cargo test
    )""",
    re.X,
)
_TEST_NICE = re.compile(r"\n>[ \t]")  # the failing source line, when room is left
_TEST_FAILED = re.compile(r"\n(?:FAILED|FAIL|ERROR)\b|\d (?:failed|errors?)\b")

_WINDOWS_OK = (10, 8)
_WINDOWS_FAILED = (60, 40)


def _failed(padded: str, exit_code: int | None) -> bool:
    if exit_code is not None:
        return exit_code != 0
    return _TEST_FAILED.search(padded) is not None


def _project_test(text: str, *, limit: int, exit_code: int | None) -> str:
    lines, padded = text.split("\n"), _padded(text)
    picker = _Picker(lines, limit)
    picker.take_all(_line_numbers(padded, _TEST_MUST) + _last_line(text), force=True)
    failed = _failed(padded, exit_code)
    if failed:
        picker.take_all(_line_numbers(padded, _TEST_NICE))
    head, tail = _WINDOWS_FAILED if failed else _WINDOWS_OK
    picker.windows(head=head, tail=tail)
    return _render_lines(lines, picker.chosen)
