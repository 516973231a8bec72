"""Folding a prior note into a new one, section by section, no line twice."""

from __future__ import annotations

import re
from collections.abc import Sequence

from contexts.flowctx.notes.format import (
    _EARLIER_REQUESTS,
    _LINE_CHARS,
    FAILED,
    FILES,
    GOAL,
    IDENTIFIERS,
    OPEN,
    WORKING,
    _lines,
    _one_line,
)
from contexts.flowctx.notes.found import _IDENTIFIER_KINDS, _file_line


def _line_key(section: str, line: str) -> str:
    text = " ".join(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).split())
    if section in (WORKING, FAILED):
        # The same command is the same approach: the newer line, with its newer
        # outcome and counts, replaces the older one.
        text = re.sub(
            r"(?: \((?:\d+ times|fixed later|worked after failing earlier)\))+$", "", text
        )
        text = text.split(" → ", 1)[0]
    if section == OPEN:
        text = re.sub(r"^(?:Unresolved|Where it stopped|Open question): ", "", text)
    return text


_REPLY_STATE = ("Where it stopped", "Open question", "TODO", "Next")


def _merge(
    prior: dict[str, str], new: dict[str, list[str]], *, answered: bool
) -> dict[str, list[str]]:
    """`new` with a prior note folded in, section by section, no line twice.

    `answered`: the span after the prior note has a user request in it.
    """
    merged: dict[str, list[str]] = {GOAL: _merge_goal(_lines(prior[GOAL]), new[GOAL])}
    merged[IDENTIFIERS] = _merge_identifiers(_lines(prior[IDENTIFIERS]), new[IDENTIFIERS])
    merged[FILES] = _merge_files(_lines(prior[FILES]), new[FILES])
    worked = {_line_key(WORKING, line) for line in new[WORKING]}
    for name in (WORKING, FAILED, OPEN):
        older = [line for line in _lines(prior[name]) if line.strip()]
        if name == OPEN:
            # A prior failure that has since worked is no longer open, and the
            # prior reply's questions were answered by the user's next request.
            older = [
                line
                for line in older
                if _line_key(OPEN, line).split(" → ", 1)[0] not in worked
                and not (line.lstrip("- ").startswith(_REPLY_STATE) and answered)
            ]
        newer_keys = {_line_key(name, line) for line in new[name]}
        kept: list[str] = []
        seen: set[str] = set()
        for line in older:
            key = _line_key(name, line)
            if key not in newer_keys and key not in seen:
                seen.add(key)
                if name == FAILED and key in worked and not line.endswith("(fixed later)"):
                    line += " (fixed later)"  # the span since the prior note fixed it
                kept.append(line)
        merged[name] = kept + new[name]
    return merged


def _split_goal(lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the current goal's lines, the other lines: earlier requests and summaries)."""
    lines = list(lines)
    for index, line in enumerate(lines):
        if line.strip() == "" or line.startswith(("Earlier requests:", "Earlier summary:")):
            return lines[:index], [x for x in lines[index:] if x.strip()]
    return lines, []


def _merge_goal(prior: Sequence[str], new: Sequence[str]) -> list[str]:
    prior_goal, prior_rest = _split_goal(prior)
    prior_goal = [line for line in prior_goal if not line.startswith("Latest user message:")]
    new_goal, new_rest = _split_goal(new)
    if not new_goal:  # a span with no request in it: the prior goal still stands
        new_goal, prior_goal = prior_goal, []
    earlier: list[str] = []
    summaries: list[str] = []
    if prior_goal:
        earlier.append(f"- {_one_line(' '.join(prior_goal), 160)}")
    for line in prior_rest + new_rest:
        if line.startswith("Earlier summary:"):
            summaries.append(line)
        elif line.startswith("- "):
            earlier.append(line)
    current = _one_line(" ".join(new_goal), 160)
    unique = [x for x in dict.fromkeys(earlier) if x[2:] != current][-_EARLIER_REQUESTS:]
    lines = list(new_goal)
    if unique:
        lines += ["", "Earlier requests:", *unique]
    for summary in dict.fromkeys(summaries):
        lines += ["", summary]
    return lines


_GROUPED = re.compile(r"^- ([\w ]+): ((?:`[^`]+`(?:, )?)+)$")
_FILE_LINE = re.compile(r"^- `([^`]+)` — ([a-z, ]+)(?:; lines? ([\d, ]+))?$")


def _merge_identifiers(prior: Sequence[str], new: Sequence[str]) -> list[str]:
    groups: dict[str, list[str]] = {}
    plain: list[str] = []
    for line in [*prior, *new]:
        match = _GROUPED.match(line.strip())
        if match:
            tokens = re.findall(r"`([^`]+)`", match.group(2))
            groups.setdefault(match.group(1), []).extend(tokens)
        elif line.strip() and line not in plain:
            plain.append(line)
    # A token a free-form prior line already carries is not listed again.
    listed = {t for line in plain for t in re.findall(r"`([^`]+)`", line)}
    lines: list[str] = []
    known = [kind for kind, _ in _IDENTIFIER_KINDS]
    for kind in known + sorted(set(groups) - set(known)):
        tokens = [t for t in dict.fromkeys(groups.get(kind, [])) if t not in listed]
        listed.update(tokens)
        line = f"- {kind}:"
        for token in tokens:
            piece = f" `{token}`"
            if len(line) + len(piece) + 1 > _LINE_CHARS and not line.endswith(":"):
                lines.append(line.rstrip(","))
                line = f"- {kind}:"
            line += piece + ","
        if not line.endswith(":"):
            lines.append(line.rstrip(","))
    return lines + plain


def _merge_files(prior: Sequence[str], new: Sequence[str]) -> list[str]:
    entries: dict[str, tuple[set[str], list[str]]] = {}
    plain: list[str] = []
    for line in [*prior, *new]:
        match = _FILE_LINE.match(line.strip())
        if not match:
            if line.strip() and line not in plain and not line.startswith("- … and "):
                plain.append(line)
            continue
        actions, numbers = entries.setdefault(match.group(1), (set(), []))
        actions.update(a.strip() for a in match.group(2).split(","))
        for number in (match.group(3) or "").split(","):
            if number.strip() and number.strip() not in numbers and len(numbers) < 3:
                numbers.append(number.strip())
    # Edited and created files first: they are what the next engineer must not lose.
    changed = sorted(entries, key=lambda path: not entries[path][0] & {"edited", "created"})
    return [_file_line(path, *entries[path]) for path in changed] + plain
