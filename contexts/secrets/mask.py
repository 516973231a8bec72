"""Masking: a text with each credential cut out, and the list of what was cut.

The one rule for whatever memflow keeps or shows that it cannot refuse (a
tool's output, a session's event log): each credential becomes
`[redacted: kind]`, and the caller is told what was masked, so it can say the
text is no longer the original byte for byte.

Some secrets mean nothing without an id beside them, and the rules know the id
better than the secret: an AWS secret access key is 40 base64 characters that
look like any hash. The pair rules mask the secret that stands near its id.
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from contexts.secrets.budget import spent
from contexts.secrets.rules import _PEM_END, _any_anchor, _groups
from contexts.secrets.scan import Span, _Scan

# Below this, asking every anchor first costs less than it saves.
_SHORT = 4096
# The text is scanned in pieces of about this size, cut at a line's end (no
# rule reads past one), so a spent budget leaves a known, unscanned rest.
_PIECE = 65_536
# A line longer than a piece is cut inside; the next piece starts this far back.
_OVERLAP = 1024
# What stands where unscanned text was.
WITHHELD = "[withheld: not scanned for credentials in time]"
UNSCANNED = "unscanned text"


@dataclass(frozen=True)
class Masked:
    """A text as it may be kept: `kinds` names each credential cut out, in order;
    `withheld` counts the characters cut because the budget ran out first."""

    text: str
    kinds: tuple[str, ...] = ()
    withheld: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.kinds) or self.withheld > 0

    def summary(self) -> list[str]:
        """What was masked, one entry per kind with its count (`2 x AWS access key id`)."""
        counts: dict[str, int] = {}
        for kind in self.kinds:
            counts[kind] = counts.get(kind, 0) + 1
        out = [f"{n} x {kind}" if n > 1 else kind for kind, n in counts.items()]
        if self.withheld:
            out.append(f"{self.withheld:,} characters not scanned in time")
        return out


@dataclass
class _Found:
    spans: list[Span] = field(default_factory=list)
    scanned_to: int = 0  # everything before this was scanned


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    at = 0
    while at < len(text):
        end = min(len(text), at + _PIECE)
        if end < len(text):
            newline = text.rfind("\n", at + _PIECE // 2, end)
            end = newline + 1 if newline >= 0 else end
        yield at, end
        if end >= len(text):
            return
        at = end if text[end - 1] == "\n" else end - _OVERLAP


def _piece_spans(text: str, offset: int, *, first_only: bool = False) -> list[Span]:
    """The credentials in one piece (the first only, if asked), placed in the whole text."""
    scan = _Scan(text)
    if len(text) < _SHORT and not _any_anchor(scan):
        return []
    spans: list[Span] = []
    for group in _groups():
        for start, end, hits in scan.windows(group):
            for finder in group.finders:
                if first_only:
                    for span in finder(scan, start, end, hits):
                        return [(span[0] + offset, span[1] + offset, span[2])]
                else:
                    spans += finder(scan, start, end, hits)
    if offset:
        spans = [(s + offset, e + offset, kind) for s, e, kind in spans]
    return spans


def spans_within(text: str, until: float, *, first_only: bool = False) -> _Found:
    """The credentials in `text`, piece by piece until the deadline `until` passes."""
    found = _Found()
    for start, end in _pieces(text):
        if spent(until):
            return found
        spans = _piece_spans(text[start:end], start, first_only=first_only)
        found.spans += spans
        if first_only and spans:
            found.scanned_to = len(text)
            return found
        found.scanned_to = end
    found.scanned_to = len(text)
    return found


_KIND = operator.itemgetter(2)

# --- pairs --------------------------------------------------------------------------------------

# A secret that goes with an id found near it: (the id's kind, the secret's shape, its kind).
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_KEY_ID = re.compile(r"(?i)private_key_id[\"']?\s*[:=]\s*[\"']?([0-9a-f]{40})")
_PAIRS = (
    ("AWS access key id", _AWS_SECRET, 0, "AWS secret access key"),
    ("private key", _KEY_ID, 1, "private key id"),
)
# How far from its id a secret is looked for: the same block of lines.
_PAIR_REACH = 400


def _paired(text: str, spans: list[Span]) -> list[Span]:
    """The secrets standing near their ids, each stretch around ids read once
    (ids close together share one: a page of AWS ids is not read 40 times over)."""
    more: list[Span] = []
    for id_kind, shape, group, secret_kind in _PAIRS:
        if id_kind not in map(_KIND, spans):  # asked in C: most texts have no id
            continue
        stretches: list[tuple[int, int]] = []
        for start, end, kind in sorted(spans):
            if kind != id_kind:
                continue
            low, high = max(0, start - _PAIR_REACH), min(len(text), end + _PAIR_REACH)
            if stretches and low <= stretches[-1][1]:
                stretches[-1] = (stretches[-1][0], high)
            else:
                stretches.append((low, high))
        for low, high in stretches:
            # The id itself never has the secret's shape; one overlapping a
            # masked span is merged with it when masking.
            more += [(*m.span(group), secret_kind) for m in shape.finditer(text, low, high)]
    return more


# --- masking ------------------------------------------------------------------------------------


def _pem_blocks(text: str, spans: list[Span]) -> list[Span]:
    """A private key's span widened to its whole block, header to footer (or to the end)."""
    if "private key" not in map(_KIND, spans):
        return spans
    footers: list[tuple[int, int]] | None = None
    out: list[Span] = []
    for start, end, kind in spans:
        if kind == "private key":
            while start > 0 and text[start - 1] == "-":
                start -= 1  # detect-secrets' patterns start at BEGIN
            if footers is None:  # found once, not once a header
                footers = [m.span() for m in _PEM_END.finditer(text)]
            at = bisect.bisect_left(footers, (end, 0))
            end = footers[at][1] if at < len(footers) else len(text)
        out.append((start, end, kind))
    return out


def mask_within(text: str, until: float) -> Masked:
    """`text` with its credentials cut out, scanning until the deadline `until`."""
    found = spans_within(text, until)
    if not found.spans and found.scanned_to >= len(text):
        return Masked(text)
    spans = _pem_blocks(text, found.spans) + _paired(text, found.spans)
    parts: list[str] = []
    kinds: list[str] = []
    add, mark = parts.append, kinds.append
    at = 0
    for start, end, kind in sorted(spans):
        if start < at:  # overlaps one already cut out (found by two rules, or two pieces)
            if end > at:
                at = end
            continue
        add(text[at:start])
        add(f"[redacted: {kind}]")
        mark(kind)
        at = end
    withheld = 0
    if found.scanned_to < len(text):
        rest = max(at, found.scanned_to)
        withheld = len(text) - rest
        parts += [text[at:rest], WITHHELD]
    else:
        parts.append(text[at:])
    return Masked("".join(parts), tuple(kinds), withheld)
