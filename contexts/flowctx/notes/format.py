"""The note format: six fixed sections, read leniently, written canonically, kept in bounds."""

from __future__ import annotations

import re

SECTIONS = (
    "TASK / GOAL",
    "WORKING APPROACHES",
    "FAILED APPROACHES",
    "KEY IDENTIFIERS",
    "FILE ARTIFACTS",
    "OPEN STATE",
)
GOAL, WORKING, FAILED, IDENTIFIERS, FILES, OPEN = SECTIONS
NONE = "(none)"

# Bounds: a fold of ~40,000 tokens becomes a note of about a thousand.
_NOTE_CHARS = 4_000
_SECTION_LINES = 15
_LINE_CHARS = 220
_GOAL_CHARS = 600
_GOAL_LINES = 8
_EARLIER_REQUESTS = 5


_HEADING_MARK = re.compile(r"^\s{0,3}(#{1,6})\s*(.*?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s{0,3}\*\*(.+?)\*\*\s*:?\s*$")
_EMPTY_BODIES = {"", "(none)", "none", "- (none)", "-", "n/a", "(empty)", "- none"}
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"[^A-Z]+", " ", title.upper()).split())


_SECTION_KEYS = {_title_key(name): name for name in SECTIONS}


def _section_for(title: str) -> str | None:
    key = _title_key(re.sub(r"^\s*\d+[.)]\s*", "", title))
    for section_key, name in _SECTION_KEYS.items():
        if key == section_key or key.startswith(section_key + " "):
            return name
    return None


def _parse(text: str) -> dict[str, str]:
    """The sections found in `text` (present ones only), bodies stripped."""
    text = _THINKING.sub("", text).strip()
    fenced = re.fullmatch(r"```[\w-]*\n(.*)\n```", text, re.DOTALL)
    if fenced:  # a model that wrapped the whole note in a code block
        text = fenced.group(1).strip()
    found: dict[str, list[str]] = {}
    current: str | None = None
    fenced_block = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced_block = not fenced_block
        if fenced_block or line.lstrip().startswith("```"):
            if current is not None:
                found[current].append(line.rstrip())
            continue
        marked = _HEADING_MARK.match(line)
        bold = _BOLD_HEADING.match(line)
        title = marked.group(2) if marked else bold.group(1) if bold else None
        if title is None and line.strip().rstrip(":").isupper():
            title = line.strip().rstrip(":")  # a bare "TASK / GOAL:" line
        section = _section_for(title) if title else None
        if section is not None:
            if section in found:
                raise ValueError(f"the section {section!r} appears twice")
            found[section] = []
            current = section
        elif marked and len(marked.group(1)) == 2 and current is not None:
            raise ValueError(
                f"unexpected heading {line.strip()!r}: a note has only the six sections"
            )
        elif current is not None:
            found[current].append(line.rstrip())
        # Anything before the first section is a model's preamble ("Here is the
        # note:"), not part of the note.
    if not found:
        raise ValueError("no handoff-note sections found (expected headings like '## TASK / GOAL')")
    bodies = {}
    for name, lines in found.items():
        body = "\n".join(lines).strip("\n").strip()
        bodies[name] = "" if body.lower() in _EMPTY_BODIES else body
    return bodies


def note_sections(text: str) -> dict[str, str]:
    """The six section bodies of a note, "" for an empty or missing one.

    Raises ValueError when the text cannot be read as a note.
    """
    found = _parse(text)
    return {name: found.get(name, "") for name in SECTIONS}


def _lines(body: str) -> list[str]:
    return [line.rstrip() for line in body.strip().splitlines()]


def _render(sections: dict[str, list[str]]) -> str:
    parts = []
    for name in SECTIONS:
        body = "\n".join(sections.get(name) or []).strip()
        parts.append(f"## {name}\n{body or NONE}")
    return "\n\n".join(parts)


def _fit(sections: dict[str, list[str]]) -> dict[str, list[str]]:
    """The note within its bounds: lines per section, characters per line and in all.

    Where lines must go, the oldest approaches and state go first (the last
    lines are the latest) and the lowest-ranked identifiers and files go first
    (those lists are ranked, best first).
    """
    fitted: dict[str, list[str]] = {}
    for name in SECTIONS:
        lines = [line for line in sections.get(name) or [] if name == GOAL or line.strip()]
        limit = _GOAL_CHARS if name == GOAL else _LINE_CHARS + 80
        lines = [line if len(line) <= limit else _clip(line, limit) for line in lines]
        if len(lines) > _SECTION_LINES:
            ranked = name in (IDENTIFIERS, FILES)
            lines = lines[:_SECTION_LINES] if ranked else lines[-_SECTION_LINES:]
        fitted[name] = lines
    while len(_render(fitted)) > _NOTE_CHARS:
        trimmable = [n for n in SECTIONS if len(fitted[n]) > 1 or (n != GOAL and fitted[n])]
        if not trimmable:
            break
        longest = max(trimmable, key=lambda n: (sum(len(x) for x in fitted[n]), -SECTIONS.index(n)))
        if longest in (IDENTIFIERS, FILES, GOAL):
            fitted[longest] = fitted[longest][:-1]
        else:
            fitted[longest] = fitted[longest][1:]
    return fitted


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str, limit: int) -> str:
    return _clip(" ".join(text.split()), limit)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _middle_out(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return (
        f"{text[:head]}\n[… {len(text) - limit} characters left out …]\n{text[-(limit - head) :]}"
    )
