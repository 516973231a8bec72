"""What a tool result is: JSON, a diff, code, a log, search hits, a test run, command output
or prose."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from contexts.flowctx.projection.lines import _padded

# Patterns that look at line starts spell them `\n` and run over the text with a
# newline added at each end (see `_padded`): a pattern opening with a literal is
# scanned for in C, several times faster than `^` under re.M.
_TEST_MARKER = re.compile(
    r"""\n(?:=+\ test\ session\ starts\ =+(?=\n)               # pytest
         | =+\ (?:\d+\ [a-z]+,?\ )+in\ [\d.]+s\b[^\n]*=(?=\n)  # pytest final summary
         | (?:FAILED|ERROR)\ \S+::\S                         # pytest short summary
         | \S+\.py\ [.FEsxX]+\ +\[\ *\d+%\](?=\n)          # pytest progress
         | Ran\ \d+\ tests?\ in\ [\d.]+s(?=\n)             # unittest
         | ---\ (?:FAIL|PASS):\ \S                          # go test
         | test\ result:\ (?:ok|FAILED)\.                    # cargo test
    )""",
    re.X,
)
_TEST_WEAK = re.compile(r"\n(?:FAIL|PASS|FAILED|PASSED|ok)\b|\d (?:passed|failed)\b")
_DIFF_MARKER = re.compile(
    r"\n(?:diff --git |@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@|commit [0-9a-f]{40}\n)"
)
# Compiler diagnostics (`x.c:12:5: warning: …`) look like search hits: they are checked first.
_DIAGNOSTIC = re.compile(r"\n[^\s:]+:\d+:\d+: (?:fatal )?(?:error|warning|note):")
_TRACEBACK = re.compile(r"\nTraceback \(most recent call last\):\n")
# `path:12:text` (grep -n, git grep -n, rg); the path needs a letter, dot or slash, so a
# clock (`12:30:45`) is not a path.
_HIT_LINE = re.compile(r"(?=[^\s:]*[A-Za-z/._])[^\s:]+([:-])\d+\1")
_TIMESTAMPED = re.compile(r"\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}")
_LOG_LINE = re.compile(
    r"""\[?\d{4}-\d{2}-\d{2}[T\ ]\d{1,2}:\d{2}          # ISO timestamp
      | \[?\d{1,2}:\d{2}:\d{2}                          # clock
      | [A-Z][a-z]{2}\ [\ \d]\d\ \d{2}:\d{2}:\d{2}      # syslog
      | \[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\b
      | (?:Compiling|Listing)\ '                        # python -m compileall
      | \[\ *\d+%\]                                     # cmake, ninja
      | make(?:\[\d+\])?:\                              # make
      | \{"                                             # JSON lines
    """,
    re.X,
)
_CODE_LINE = re.compile(
    r"""[ \t]*(?:(?:async\ )?def\ |class\ |import\ |from\ \S+\ import\ |return\b|raise\b
        |if\ |elif\ |else\b|for\ |while\ |try:|except\b|with\ |@\w|//|/\*|\*
        |function\b|const\ |let\ |var\ |export\ |package\ |func\ |fn\ |pub\ |impl\b
        |struct\ |enum\ |interface\ |public\ |private\ |static\ |[{}\])])
      | .*[;{}:,(\[]\s*$""",
    re.X,
)
# A path: one word holding a slash, or a line starting at the root, `./` or `~/` (such a
# path may hold spaces).
_PATH_LINE = re.compile(r"[ \t]*(?:(?:/|\./|~/)[^\t]*|[^\s/]*/\S*)$")
# Markdown headings, or the upper-case section names of man and pydoc pages.
_HEADING = re.compile(r"\n(?:#{1,6}[ \t][^\n]+|[A-Z][A-Z0-9 ]{2,40})(?=\n)")

_TOOL_HINTS = {
    "grep": "search",
    "rg": "search",
    "search": "search",
    "pytest": "test",
    "test": "test",
    "bash": "cli",
    "shell": "cli",
    "exec": "cli",
    "run": "cli",
    "terminal": "cli",
    "command": "cli",
}


def _detect(text: str, *, tool_name: str | None) -> tuple[str, Any]:
    """(kind, parsed JSON or None). Order matters: a failing pytest run holds `def`
    and `class` lines, so test markers are looked for before code."""
    hint = _TOOL_HINTS.get((tool_name or "").strip().lower())
    if not text.strip():
        return "text", None
    parsed = _parse_json(text)
    if parsed is not _NOT_JSON:
        return "json", parsed
    sample = _padded(_sample(text))
    if _TEST_MARKER.search(sample) or (hint == "test" and _TEST_WEAK.search(sample)):
        return "test", None
    if _DIFF_MARKER.search(sample):
        return "diff", None
    if _DIAGNOSTIC.search(sample):
        return "log", None
    lines = _sample_lines(sample)
    # `2026-12-01T10:00:00Z` has the shape of `name-12-…`: a timestamped line is no hit.
    untimed = [line if not _TIMESTAMPED.match(line) else "" for line in lines]
    if _share(untimed, _HIT_LINE) >= (0.3 if hint == "search" else 0.6):
        return "search", None
    if _share(lines, _LOG_LINE) >= 0.5:
        return "log", None
    # `#` lines are comments in code and headings in markdown: they count for neither.
    uncommented = [line for line in lines if not line.lstrip().startswith("#")]
    if not _TRACEBACK.search(sample) and _share(uncommented, _CODE_LINE) >= 0.25:
        return "code", None
    if len(_HEADING.findall(sample)) >= 3:  # markdown, man and pydoc pages
        return "text", None
    if hint == "cli" or _share(lines, _PATH_LINE) >= 0.7:
        return "cli", None
    return "text", None


_NOT_JSON = object()


def _parse_json(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return _NOT_JSON
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _sample(text: str, *, head: int = 96_000, tail: int = 32_000) -> str:
    """The start and end of a large text: markers live there, and scanning a megabyte
    with a dozen patterns would cost more than projecting it."""
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n{text[-tail:]}"


def _sample_lines(sample: str) -> list[str]:
    lines = sample.split("\n")
    if len(lines) > 250:
        lines = lines[:200] + lines[-50:]
    return [line for line in lines if line.strip()]


def _share(lines: Sequence[str], pattern: re.Pattern[str]) -> float:
    if not lines:
        return 0.0
    return sum(1 for line in lines if pattern.match(line)) / len(lines)
