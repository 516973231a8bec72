"""Command output: alarms and sections kept; path lists and `ls -R` listings grouped."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from contexts.flowctx.projection.detect import _PATH_LINE, _sample, _sample_lines, _share
from contexts.flowctx.projection.lines import (
    _clip,
    _first_fitting,
    _last_line,
    _line_numbers,
    _omitted_lines,
    _padded,
    _Picker,
    _render_lines,
)
from contexts.flowctx.projection.testrun import _WINDOWS_FAILED, _WINDOWS_OK, _failed

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
