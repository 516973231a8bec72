"""Reversible tool-result projection (flowctx capability 3, "可逆工具结果投影").

A tool result over the budget reaches the model as a projection: a shorter
text shaped by what the result is (a test run, a diff, JSON, a log…), while
the original is stored under its hash and can be fetched back byte for byte.
The caller stores the original and appends the marker naming the hash; this
module only decides what the reader sees.

A projection may drop anything the reader can fetch back, but never what the
reader needs next. It always keeps failing test ids, assertion and error lines
with their file:line, the final summary line, warnings and errors in logs,
changed file names in diffs, the distinct paths of search hits, and the
top-level keys and a few values of JSON. Those lines are kept even when they
alone pass the budget: the budget bounds everything else.

Pure Python and no Django: the hook runs this on every large tool result, so
it must cost milliseconds per megabyte and must never raise.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

logger = logging.getLogger(__name__)

KINDS = ("json", "diff", "code", "log", "search", "test", "cli", "text")

# --- token estimate ----------------------------------------------------------------------

# Han ideographs (with extension A and compatibility forms), CJK punctuation,
# kana, Hangul syllables and full-width forms: each usually costs a token or more.
_CJK = re.compile(
    "[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ASCII_RUNS = re.compile("[\x00-\x7f]+")


def estimate_tokens(text: str) -> float:
    """flowctx's estimate: CJK characters 1.5 tokens, astral ones (emoji…) 2, others 0.25."""
    if text.isascii():
        return len(text) * 0.25
    # Only non-ASCII characters can cost more than 0.25; setting them apart first is
    # one C pass, and the two counts then run over a few characters, not megabytes.
    rare = _ASCII_RUNS.sub("", text)
    cjk = len(_CJK.findall(rare))
    astral = len(_ASTRAL.findall(rare))
    return cjk * 1.5 + astral * 2.0 + (len(text) - cjk - astral) * 0.25


# --- the public entry points ---------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    kind: str  # one of KINDS: the projector that produced `text`
    text: str  # the projected body, without the retrieval marker
    original_chars: int
    projected_chars: int


def detect_kind(text: str, *, tool_name: str | None = None) -> str:
    """What the text is: one of KINDS ("text" when nothing more specific fits)."""
    return _detect(text, tool_name=tool_name)[0]


def project(
    text: str,
    *,
    budget_tokens: int = 1000,
    tool_name: str | None = None,
    exit_code: int | None = None,
) -> Projection | None:
    """The projection of a tool result over `budget_tokens`, or None to keep it as it is.

    None when the text is within budget, or when the projection would not be
    shorter (it is then abandoned: a longer "summary" only costs tokens).
    """
    tokens = estimate_tokens(text)
    if tokens <= budget_tokens or not text:
        return None
    # The projectors count characters; the text's own token density converts the
    # budget, so CJK output gets fewer characters than ASCII output.
    limit = max(int(budget_tokens * len(text) / tokens), _MIN_LIMIT)
    kind, parsed = _detect(text, tool_name=tool_name)
    body = _structured(kind, text, limit=limit, exit_code=exit_code, parsed=parsed)
    if body is None:
        kind, body = "text", _head_tail(text, limit)
    elif len(body) > limit * _HARD_CAP:
        # Must-keep lines alone can pass the budget (a log where every line is an
        # error); past a few budgets the structured view is cut like plain text,
        # as the original is one retrieve away.
        body = _head_tail(body, limit * _HARD_CAP)
    if len(body) >= len(text):
        return None
    return Projection(kind=kind, text=body, original_chars=len(text), projected_chars=len(body))


_MIN_LIMIT = 64
_HARD_CAP = 4


def _structured(
    kind: str, text: str, *, limit: int, exit_code: int | None, parsed: Any
) -> str | None:
    """The projector's output, or None when structure does not help."""
    try:
        if kind == "json":
            return _project_json(parsed, limit=limit)
        return _PROJECTORS[kind](text, limit=limit, exit_code=exit_code)
    except Exception:
        # A projector bug must cost the structure, never the agent's tool call:
        # this runs inside `tools/post-execute`. Logged, so a test can catch it.
        logger.exception("flowctx projection failed for a %s result", kind)
        return None


# --- detection -----------------------------------------------------------------------------

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


# --- shared pieces -------------------------------------------------------------------------

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


# --- test runs -----------------------------------------------------------------------------

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


# --- command output ------------------------------------------------------------------------

# Literal words, each scanned for over the lowercased text: an alternation, or
# re.IGNORECASE, makes the scan five to ten times slower.
_CLI_ALARMS = tuple(
    re.compile(re.escape(word))
    for word in (
        *("error", "fatal", "fail", "exception", "traceback", "warning", "denied"),
        *("not found", "no such", "cannot", "unable to", "panic", "abort", "segmentation fault"),
    )
)
_SECTION = re.compile(r"\n\S[^\n]*:[ \t]*(?=\n)")  # ls -R directories, `Files:`
_KEY_VALUE = re.compile(r"\n[A-Z][\w-]{1,30}:[ \t]\S")  # record fields (pip show)


def _project_cli(text: str, *, limit: int, exit_code: int | None) -> str:
    """Error and warning lines, section headings, the last line; then record fields and
    head/tail windows sized by the exit code. Lists of paths and `ls -R` listings are
    grouped instead."""
    lines, padded = text.split("\n"), _padded(text)
    if _share(_sample_lines(_sample(text)), _PATH_LINE) >= 0.7:
        return _project_paths(lines, limit=limit)
    sections = _line_numbers(padded, _SECTION)
    if _is_listing(lines, sections):
        return _project_listing(lines, sections, limit=limit)
    alarming = _line_numbers(padded.lower(), *_CLI_ALARMS)
    picker = _Picker(lines, limit)
    picker.take_all(sorted({*alarming, *sections, *_last_line(text)}), force=True)
    picker.take_all(_line_numbers(padded, _KEY_VALUE))
    head, tail = _WINDOWS_FAILED if _failed(padded, exit_code) else _WINDOWS_OK
    picker.windows(head=head, tail=tail)
    return _render_lines(lines, picker.chosen)


def _project_paths(lines: list[str], *, limit: int) -> str:
    """A list of paths (dpkg -L, find, pip show -f) grouped by directory."""
    groups: dict[str, list[str]] = {}
    others: list[str] = []
    for line in lines:
        path = line.strip()
        # A path may hold spaces (`Visual Studio 17 2022.rst`); a `Location: /x` field may not.
        if "/" in path and (path[0] in "/.~" or " " not in path):
            parent, _, name = path.rstrip("/").rpartition("/")
            groups.setdefault(parent.rstrip("/") + "/", []).append(name)
        elif path:
            others.append(_clip(line))
    total = sum(len(names) for names in groups.values())
    header = [f"{total} paths in {len(groups)} directories", *others[:40]]
    if len(others) > 40:
        header.append(_omitted_lines(len(others) - 40))

    def named() -> Iterator[str]:
        yield from header
        for parent, names in groups.items():
            shown = ", ".join(_clip(name, 60) for name in names[:8])
            more = f", … +{len(names) - 8}" if len(names) > 8 else ""
            yield f"{parent} ({len(names)}): {shown}{more}"

    def by_prefix(depth: int | None) -> Callable[[], Iterator[str]]:
        def render() -> Iterator[str]:
            yield from header
            for prefix, (count, dirs) in _path_prefixes(groups, depth).items():
                inside = f" in {dirs} directories" if dirs > 1 else ""
                yield f"{prefix} ({count}{inside})"

        return render

    return _first_fitting([named, by_prefix(None), by_prefix(4), by_prefix(3)], limit)


def _is_listing(lines: list[str], sections: list[int]) -> bool:
    """`ls -R`: three or more `directory:` headings, each after a blank line."""
    return len(sections) >= 3 and all(i == 0 or not lines[i - 1].strip() for i in sections)


def _project_listing(lines: list[str], sections: list[int], *, limit: int) -> str:
    """`ls -R`: every directory heading with its entry count, a few entries while they fit."""
    blocks: list[tuple[str, list[str]]] = []
    for start, end in zip(sections, [*sections[1:], len(lines)], strict=True):
        entries = [line for line in lines[start + 1 : end] if _is_entry(line)]
        blocks.append((lines[start], entries))
    preamble = [_clip(line) for line in lines[: sections[0]] if line.strip()]

    def with_entries(most: int) -> Callable[[], Iterator[str]]:
        def render() -> Iterator[str]:
            yield from preamble
            for heading, entries in blocks:
                yield f"{_clip(heading)} ({len(entries)} entries)"
                yield from (f"  {_clip(entry, 160)}" for entry in entries[:most])
                if len(entries) > most:
                    yield f"  … {len(entries) - most} more"

        return render

    def headings_only() -> Iterator[str]:
        yield from preamble
        yield from (f"{_clip(heading)} ({len(entries)})" for heading, entries in blocks)

    return _first_fitting([with_entries(6), with_entries(2), headings_only], limit)


def _is_entry(line: str) -> bool:
    """A file in an `ls -R` block: not the `total` line, nor `.` and `..` of `ls -a`."""
    stripped = line.strip()
    return (
        bool(stripped)
        and not stripped.startswith("total ")
        and not (stripped in (".", "..") or stripped.endswith((" .", " ..")))
    )


def _path_prefixes(groups: dict[str, list[str]], depth: int | None) -> dict[str, tuple[int, int]]:
    """prefix → (entries, directories), with directories cut to `depth` components."""
    counts: dict[str, tuple[int, int]] = {}
    for parent, names in groups.items():
        prefix = parent
        if depth is not None:
            parts = [part for part in parent.split("/") if part][:depth]
            prefix = ("/" if parent.startswith("/") else "") + "".join(f"{p}/" for p in parts)
        entries, dirs = counts.get(prefix, (0, 0))
        counts[prefix] = (entries + len(names), dirs + 1)
    return counts


# --- logs ----------------------------------------------------------------------------------

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


# --- search results ------------------------------------------------------------------------

_HIT = re.compile(r"\n((?=[^\s:]*[A-Za-z/._])[^\s:]+)([:-])(\d+)\2([^\n]*)")


def _project_search(text: str, *, limit: int, exit_code: int | None) -> str | None:
    """Hits grouped by file: every distinct path stays, the hit lines shrink to fit."""
    files: dict[str, list[tuple[str, str]]] = {}  # path → [(line number, text)]
    hits = 0
    for match in _HIT.finditer(_padded(text)):
        path, separator, number, rest = match.groups()
        if separator == ":":  # `-` marks context lines (grep -C)
            files.setdefault(path, []).append((number, rest))
            hits += 1
    if not files:
        return None
    header = f"{hits} hits in {len(files)} files"

    def with_lines(per_file: int) -> Callable[[], Iterator[str]]:
        def render() -> Iterator[str]:
            yield header
            for path, found in files.items():
                yield f"{path} ({len(found)})"
                for number, rest in found[:per_file]:
                    yield f"  {number}: {_clip(rest.strip(), 160)}"
                if len(found) > per_file:
                    yield f"  … {len(found) - per_file} more"

        return render

    def numbers_only() -> Iterator[str]:
        yield header
        for path, found in files.items():
            numbers = ", ".join(number for number, _ in found[:12])
            more = ", …" if len(found) > 12 else ""
            yield f"{path} ({len(found)}): {numbers}{more}"

    def paths_only() -> Iterator[str]:
        yield header
        yield from (f"{path} ({len(found)})" for path, found in files.items())

    levels = [with_lines(5), with_lines(2), numbers_only, paths_only]
    return _first_fitting(levels, limit)


# --- diffs ---------------------------------------------------------------------------------

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


# --- source code ---------------------------------------------------------------------------

# Definitions are found by scanning for each keyword as a literal (ten times faster
# than one line-anchored pattern), then kept when only indentation and modifiers
# precede the keyword on its line.
_DEFINITION_KEYWORDS = tuple(
    re.compile(keyword + r"[ \t*]")
    for keyword in (
        *("def", "class", "function", "interface", "enum", "struct", "trait"),
        *("impl", "fn", "func", "module"),
    )
)
_DEFINITION_LEAD = re.compile(
    r"""([ \t]*)(?:(?:export|default|pub(?:\([\w\ ]+\))?|public|private|protected|static
        |abstract|final|async|unsafe|extern)[ \t]+)*""",
    re.X,
)
_DEFINITION_NAME = re.compile(r"[ \t*]*([\w$]+)")


@dataclass
class _Definition:
    line: int  # 1-based
    indent: str
    signature: str
    keyword: str
    name: str
    nested: list[_Definition] = field(default_factory=list)


def _definitions(text: str) -> list[_Definition]:
    """Top-level definitions, each with the definitions nested in it."""
    padded = _padded(text)
    found: dict[int, _Definition] = {}  # line start → its definition
    for scan in _DEFINITION_KEYWORDS:
        for match in scan.finditer(padded):
            line_start = padded.rfind("\n", 0, match.start()) + 1
            lead = _DEFINITION_LEAD.fullmatch(padded, line_start, match.start())
            name = _DEFINITION_NAME.match(padded, match.end() - 1)
            if lead is None or name is None or line_start in found:
                continue
            line_end = padded.find("\n", match.end())
            signature = padded[line_start + len(lead[1]) : line_end].rstrip()
            keyword = match.group()[:-1]
            found[line_start] = _Definition(0, lead[1], signature, keyword, name[1])
    top: list[_Definition] = []
    line, position = 0, 0
    for line_start in sorted(found):
        line += padded.count("\n", position, line_start)
        position = line_start
        definition = found[line_start]
        definition.line = line  # the padding's leading newline makes this 1-based
        if definition.indent and top:
            top[-1].nested.append(definition)
        else:
            top.append(definition)
    return top


def _project_code(text: str, *, limit: int, exit_code: int | None) -> str | None:
    """An outline: definitions with their line numbers, nested ones dropped first."""
    top = _definitions(text)
    if not top:
        return None
    total = text.count("\n") + 1
    nested = sum(len(d.nested) for d in top)
    header = f"outline of {total} lines: {len(top)} top-level definitions, {nested} nested"

    def full() -> Iterator[str]:
        yield header
        for definition in top:
            for one in (definition, *definition.nested):
                yield f"{one.line:>6}  {one.indent}{_clip(one.signature, 120)}"

    def nested_names() -> Iterator[str]:
        yield header
        for definition in top:
            yield f"{definition.line:>6}  {_clip(definition.signature, 120)}"
            if definition.nested:
                names = ", ".join(one.name for one in definition.nested)
                yield f"        {len(definition.nested)} nested: {_clip(names, 300)}"

    def names_only() -> Iterator[str]:
        yield header
        for definition in top:
            inside = f"  (+{len(definition.nested)} nested)" if definition.nested else ""
            yield f"{definition.line:>6}  {definition.keyword} {definition.name}{inside}"

    return _first_fitting([full, nested_names, names_only], limit)


# --- JSON ----------------------------------------------------------------------------------

_LONG_ARRAY = 20  # from this many items an array is summarised, not listed


@dataclass(frozen=True)
class _Shape:
    """How much of a JSON value a rendering shows."""

    depth: int  # nesting shown before values become `{…n keys}` / `[…n items]`
    items: int  # leading items shown from a long array (its last item is shown too)
    keys: int  # keys shown from a nested object (top-level keys are always all shown)
    chars: int  # longest string shown whole; short values stay representative


_SHAPES = (
    _Shape(depth=6, items=12, keys=24, chars=200),
    _Shape(depth=6, items=3, keys=24, chars=200),
    _Shape(depth=4, items=2, keys=12, chars=100),
    _Shape(depth=3, items=1, keys=8, chars=60),
    _Shape(depth=2, items=1, keys=6, chars=60),
    _Shape(depth=1, items=1, keys=4, chars=60),
)


class _Meter:
    """Counts rendered characters and stops a rendering that passes its limit."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def spend(self, text: str) -> str:
        if self.left is not None:
            self.left -= len(text) + 2  # +2: the comma and space around it
            if self.left < 0:
                raise _Full
        return text


def _project_json(value: Any, *, limit: int) -> str | None:
    for shape in _SHAPES:
        try:
            return _json_top(value, shape, _Meter(limit))
        except _Full:
            continue
    try:
        return _json_top(value, _SHAPES[-1], _Meter(limit * _HARD_CAP))
    except _Full:
        return None  # thousands of top-level keys: plain head/tail is all that fits


def _json_top(value: Any, shape: _Shape, meter: _Meter) -> str:
    """One top-level entry per line; every top-level key is kept."""
    if isinstance(value, dict):
        entries = [
            f"  {meter.spend(_json_key(key))}: {_json_value(item, shape, meter, 1)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(entries) + "\n}"
    if isinstance(value, list):
        return (
            "[\n" + ",\n".join(f"  {item}" for item in _json_items(value, shape, meter, 1)) + "\n]"
        )
    return _json_value(value, shape, meter, 0)


def _json_value(value: Any, shape: _Shape, meter: _Meter, depth: int) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        if depth >= shape.depth:
            return meter.spend(f"{{…{len(value)} keys}}")
        shown = [
            f"{meter.spend(_json_key(key))}: {_json_value(item, shape, meter, depth + 1)}"
            for key, item in islice(value.items(), shape.keys)
        ]
        if len(value) > shape.keys:
            shown.append(meter.spend(f'"…": "{len(value) - shape.keys} more keys"'))
        return "{" + ", ".join(shown) + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if depth >= shape.depth:
            return meter.spend(f"[…{len(value)} items]")
        return "[" + ", ".join(_json_items(value, shape, meter, depth)) + "]"
    if isinstance(value, str) and len(value) > shape.chars:
        value = f"{value[: shape.chars]}… (+{len(value) - shape.chars} chars)"
    return meter.spend(json.dumps(value, ensure_ascii=False))


def _json_items(items: list[Any], shape: _Shape, meter: _Meter, depth: int) -> list[str]:
    """A short array whole; a long one as its first items, its shape, and its last item."""
    if len(items) < _LONG_ARRAY:
        return [_json_value(item, shape, meter, depth + 1) for item in items]
    shown = [_json_value(item, shape, meter, depth + 1) for item in items[: shape.items]]
    hidden = len(items) - shape.items - 1
    summary = f"… {hidden} more of {len(items)} items: {_json_kinds(items)} …"
    shown.append(meter.spend(json.dumps(summary, ensure_ascii=False)))
    shown.append(_json_value(items[-1], shape, meter, depth + 1))
    return shown


def _json_kinds(items: list[Any]) -> str:
    """What the items of an array are, from its first 50: `objects with keys a, b`…"""
    sample = items[:50]
    if all(isinstance(item, dict) for item in sample):
        keys: dict[str, None] = {}
        for item in sample:
            keys.update(dict.fromkeys(islice(item, 30)))
        return "objects with keys " + ", ".join(islice(keys, 30))
    return " / ".join(dict.fromkeys(_JSON_KINDS.get(type(item), "values") for item in sample))


_JSON_KINDS = {
    dict: "objects",
    list: "arrays",
    str: "strings",
    int: "numbers",
    float: "numbers",
    bool: "booleans",
    type(None): "nulls",
}


def _json_key(key: str) -> str:
    return json.dumps(_clip(key, 120), ensure_ascii=False)


# --- prose -------------------------------------------------------------------------------


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

_PROJECTORS: dict[str, Callable[..., str | None]] = {
    "text": _project_text,
    "diff": _project_diff,
    "code": _project_code,
    "log": _project_log,
    "search": _project_search,
    "test": _project_test,
    "cli": _project_cli,
}
