"""The scan of one text: anchors (where a rule can apply), rule groups and their windows."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from contexts.secrets.values import _credible

# (start, end, kind) of one credential in a text.
Span = tuple[int, int, str]
# A rule: the credentials in the scan's text[start:end], given where its anchors are in it.
Finder = Callable[["_Scan", int, int, Sequence[int]], Iterator[Span]]


@dataclass(frozen=True, eq=False)  # hashed by identity: a key of each scan's hits
class _Anchor:
    """Where a rule can apply. Each pattern starts with a literal, which keeps
    its scan as fast as `bytes.find`; it runs on the lower-cased text unless
    `cased`. `accept` (lower-cased text, hit) drops hits no rule wants."""

    pattern: re.Pattern[bytes]
    cased: bool = False
    accept: Callable[[bytes, int], bool] | None = None
    # What every hit starts with: `in` says "none here" in a fraction of a
    # microsecond, where a regex scan of a short text costs one or two.
    literal: bytes = b""


def _anchor(
    pattern: bytes,
    *,
    cased: bool = False,
    accept: Callable[[bytes, int], bool] | None = None,
    after: bytes | None = None,
) -> _Anchor:
    """An anchor on `pattern`; with `after`, a literal found only where the text starts
    or one of those characters comes just before it (asked inside the scan, not once a hit)."""
    lead = re.match(rb"(?:[^\\\[\](){}.*+?|^$]|\\[.\-/])*", pattern)
    assert lead is not None  # it matches the empty string at least
    literal = lead.group()
    prefix = literal.replace(b"\\", b"")
    # A quantifier after the last character makes that one optional.
    if prefix and pattern[len(literal) : len(literal) + 1] in (b"?", b"*", b"{"):
        prefix = prefix[:-1]
    if after is not None:
        # Looked behind from its end, so the scan still starts by finding the literal.
        assert literal == pattern, "`after` is for a literal"
        pattern += rb"(?<![^" + re.escape(after) + rb"]" + pattern + rb")"
    return _Anchor(re.compile(pattern), cased, accept, prefix)


@dataclass(frozen=True)
class _Group:
    """Rules tried in a window around each accepted hit of their anchors: at
    most `before` characters before it and `after` after, within its line."""

    finders: tuple[Finder, ...]
    anchors: tuple[_Anchor, ...]
    before: int = 64
    after: int = 256
    # Which of a piece's hits the rules want (all of them at once: one call, not one a hit).
    select: Callable[[_Scan, list[int]], list[int]] | None = None


# A merged window longer than this is cut, so a long line with an anchor
# every few characters is still scanned about once per group.
_WINDOW_CAP = 16_384


# How far past its anchor a rule reads for one hit: a name, its sign and a
# value (at most 512 characters, `_credible`). Each hit's rules read at most
# this far whatever the window around it, so the work is linear in the text.
_REACH = 640
# A token after `Authorization:` or `Bearer` (JWTs and SAML assertions run long).
_TOKEN_REACH = 8192


def _near(hit: int, end: int, reach: int = _REACH) -> int:
    """Where the rules tried at `hit` stop reading: `reach` past it, within the window."""
    return min(end, hit + reach)


class _Scan:
    """One text, with each anchor's hits found once and shared by the groups."""

    def __init__(self, text: str) -> None:
        self.text = text
        # One byte a character (anything else becomes `?`), so a byte's index
        # is the character's; bytes.lower() folds ASCII only, keeping them.
        self.raw = text.encode("ascii", "replace")
        self.folded = self.raw.lower()
        self._hits: dict[_Anchor, list[int]] = {}
        # How the credential name at a hit is used (`_ASSIGNED`…), for the named rules.
        self.uses: dict[int, int] = {}
        self.signs: dict[int, bytes] = {}  # and the sign after it (`=`, `:`, `(`…)
        self.sign_ends: dict[int, int] = {}
        self.named_until = 0  # the end of the last name so read: later hits in it add nothing
        # Each verdict on a value, once a scan: near-matching text repeats its values,
        # and a verdict costs microseconds of Python (kept no longer than the scan).
        self._verdicts: dict[object, dict[Any, bool]] = {}

    def verdicts_of(self, check: object) -> dict[Any, bool]:
        """This scan's verdicts of `check`, by what it was asked about."""
        verdicts = self._verdicts.get(check)
        if verdicts is None:
            verdicts = self._verdicts[check] = {}
        return verdicts

    def credible(self, value: str, *, quoted: bool, strict: bool) -> bool:
        """`values._credible`, asked once a scan for each value."""
        verdicts, key = self.verdicts_of(_credible), (value, quoted, strict)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = _credible(value, quoted=quoted, strict=strict)
        return verdict

    def valid(self, check: Callable[[str], bool], value: str) -> bool:
        """`check(value)`, asked once a scan for each value."""
        verdicts = self.verdicts_of(check)
        verdict = verdicts.get(value)
        if verdict is None:
            verdict = verdicts[value] = check(value)
        return verdict

    def hits(self, anchor: _Anchor) -> list[int]:
        found = self._hits.get(anchor)
        if found is None:
            data = self.raw if anchor.cased else self.folded
            if anchor.literal not in data:
                found = self._hits[anchor] = []
                return found
            found = [m.start() for m in anchor.pattern.finditer(data)]
            if anchor.accept is not None:
                found = [at for at in found if anchor.accept(self.folded, at)]
            self._hits[anchor] = found
        return found

    def windows(self, group: _Group) -> Iterator[tuple[int, int, list[int]]]:
        """(start, end, hits in it) of the stretches worth trying the group's rules on."""
        hits: list[int] = []
        for anchor in group.anchors:
            hits += self.hits(anchor)
        hits.sort()
        if group.select is not None:
            hits = group.select(self, hits)
        if not hits:
            return
        yield from self._merged(hits, group.before, group.after)

    def _merged(
        self, hits: list[int], before: int, after: int
    ) -> Iterator[tuple[int, int, list[int]]]:
        """The windows of sorted `hits`: each hit's, merged with the next while they
        overlap on one line, cut at `_WINDOW_CAP`. A run of hits inside a window is
        taken at once (bisect), not hit by hit: a line of near-matching text has one
        every few characters, and the run's last one says where the window ends."""
        text, size, cap = self.text, len(self.text), _WINDOW_CAP
        assert before + after <= cap  # a window within the cap, as each one starts
        i, n = 0, len(hits)
        pending = None  # the window of the hit that ended the last one, if asked
        while i < n:
            first = i
            start, end, _ = pending or self._window(hits[i], before, after)
            pending = None
            i += 1
            line_end = -1  # where the window's line ends, once asked (-1: not yet)
            while i < n:
                if hits[i] < end:
                    # In the window, so on its line: only its end can move, and not
                    # past the line's end (asked once a window, not once a hit).
                    j = bisect.bisect_left(hits, end, i)
                    reach = hits[j - 1] + after
                    if reach > end:
                        if line_end < 0:
                            line_end = text.find("\n", end, start + cap + after)
                            line_end = size if line_end < 0 else line_end
                        reach = min(reach, line_end, size)
                        if reach - start > cap:
                            # Cut before the first hit that would take it past the cap.
                            j = bisect.bisect_right(hits, start + cap - after, i, j)
                            if j > i:
                                end = max(end, min(hits[j - 1] + after, line_end, size))
                            i = j
                            break
                    end = max(end, reach)
                    i = j
                    continue
                low, high, _ = window = self._window(hits[i], before, after)
                if low > end or high - start > cap:
                    pending = window
                    break
                end = max(end, high)
                i += 1
            yield start, end, hits[first:i]

    def _window(self, at: int, before: int, after: int) -> tuple[int, int, list[int]]:
        """The window of one hit: `before` and `after` it, within its line."""
        text = self.text
        start = max(0, at - before)
        newline = text.rfind("\n", start, at)
        start = newline + 1 if newline >= 0 else start
        end = min(len(text), at + after)
        newline = text.find("\n", at, end)
        return start, newline if newline >= 0 else end, [at]
