"""What is current: of two entries on one subject, the newer is the one that holds.

"We use npm", later "we switched to pnpm, npm is gone": both stay in the
library (nothing is lost), but a question worded like the first ("which
package manager do we use?") ranks it above the change. Mechanically, with
no model's judgment:

- two current entries are on one subject when their meanings are near
  (cosine SUBJECT_COSINE) and they share a content word (a subject's name or
  the old value: "npm", "package", "manager"), which keeps apart two entries
  only worded alike ("We use Redis for the cache", "We use Sentry for errors");
- the newer changes the older when it says something the older does not,
  and either says it changes something ("switched", "no longer", "from now
  on"...) or is the older's statement with another value: at least
  SAME_SHAPE of the shorter one's content words are shared, at most
  VALUE_WORDS differ on each side (a value swapped, not another statement),
  and a word the older lacks is not a mere number ("pnpm" after "npm"). Two
  entries that agree ("we switched to pnpm" and "packages are installed with
  pnpm; npm is no longer used"), that say different things about one subject
  ("the billing worker retries 3 times", "the billing worker keeps its queue
  in Redis") or only count on ("Release note 2", "Release note 3") are no
  change;
- of such a pair, the newer is current and the older is stale: the newer
  ranks at least where the older would, the older counts for STALE_WEIGHT of
  its score, and both are marked in what the model sees (which is current,
  which is older, and by which id);
- an entry that an explicit supersede (or a new value of its state key) left
  behind leaves recall; what the user typed about it does not, as it was a
  captured prompt rather than the entry: a captured prompt on the subject of
  a superseded entry, said before that entry was closed, is stale too, by the
  entry that replaced it.

Read-only, and one statement for a set of ids (the candidates of a recall,
the entries of a restore pack): the pairs' cosines and the superseded entries
near each captured prompt (among the latest SUPERSEDED_SCAN), through the
rows' stored vectors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection

from contexts.models import Workspace

# Two entries whose meanings are this near may be on one subject (MiniLM: a
# decision and its change score 0.4-0.9; entries on different subjects worded
# alike reach 0.6, hence the shared word too).
SUBJECT_COSINE = 0.4
# The share of the shorter text's content words two statements of one decision share
# ("We use npm for packages" / "We use pnpm for packages": all but the value).
SAME_SHAPE = 0.5
# ... and differ in at most this many words on each side: the value ("an approval from
# a code owner"), where two statements about one thing differ in most of theirs.
VALUE_WORDS = 3
# How many of the latest superseded entries a captured prompt is compared with: the
# cost stays bounded however much history a workspace keeps (a prompt typed before an
# older supersede is left unmarked).
SUPERSEDED_SCAN = 500
# A stale entry's score is multiplied by this (it stays findable, below what holds).
STALE_WEIGHT = 0.7
# How far above a stale entry's score the entry that replaced it is lifted at least.
LIFT = 1e-3

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that say nothing about what an entry is about: grammar, and the words
# people change decisions with.
_NOT_SUBJECT = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "for",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "we",
        "our",
        "us",
        "you",
        "your",
        "they",
        "their",
        "i",
        "my",
        "me",
        "he",
        "she",
        "them",
        "there",
        "here",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "had",
        "will",
        "would",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "not",
        "no",
        "now",
        "then",
        "than",
        "so",
        "too",
        "very",
        "just",
        "also",
        "only",
        "all",
        "any",
        "some",
        "each",
        "every",
        "more",
        "most",
        "other",
        "use",
        "uses",
        "used",
        "using",
        "went",
        "go",
        "goes",
        "going",
        "stay",
        "stays",
        "stayed",
        "keep",
        "keeps",
        "kept",
        "decision",
        "decided",
        "changed",
        "change",
        "changes",
        "switched",
        "switch",
        "moved",
        "move",
        "migrated",
        "replaced",
        "replaces",
        "instead",
        "longer",
        "anymore",
        "gone",
        "dropped",
        "drop",
        "deprecated",
        "retired",
        "from_now",
        "since",
        "new",
        "old",
        "is_gone",
        "what",
        "which",
        "who",
        "how",
        "when",
        "where",
        "why",
    ]
)


@dataclass
class Currency:
    """Which entries are stale, and which are current, among the ids asked about."""

    # A stale entry → the entry that holds instead.
    stale: dict[int, int] = field(default_factory=dict)
    # A current entry → the stale one it replaces (a pair of the ids asked about).
    replaces: dict[int, int] = field(default_factory=dict)

    def marks(self) -> dict[int, str]:
        """Every marked entry's mark (for rendering)."""
        return {i: self.mark(i) for i in {*self.stale, *self.replaces}}

    def mark(self, memory_id: int) -> str:
        """How an entry is marked for the model: "" for an entry with no conflict."""
        if memory_id in self.stale:
            return f"stale: #{self.stale[memory_id]} is newer on this"
        if memory_id in self.replaces:
            return f"current: replaces #{self.replaces[memory_id]}"
        return ""


def subject_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _words(text) if not w.isdigit())


def same_subject(a: str, b: str) -> bool:
    """Whether two texts, already near in meaning, name one subject (a shared content word)."""
    return bool(subject_words(a) & subject_words(b))


# Words people write a change with.
_CHANGE_CUE = re.compile(
    r"\b(switch(ed|ing)?|mov(ed|ing)|migrat(ed|ing)|replac(ed|es|ing)|instead|no\s+longer|"
    r"any\s*more|from\s+now\s+on|(is|are)\s+gone|dropp(ed|ing)|deprecated|chang(ed|ing)|"
    r"retired|now,?\s+not)\b",
    re.IGNORECASE,
)


def _words(text: str) -> frozenset[str]:
    """The content words of `text` (numbers included; a lone letter, as the s of "repo's", not)."""
    words = (w.casefold() for w in _WORD.findall(text))
    return frozenset(w for w in words if len(w) > 1 and w not in _NOT_SUBJECT)


def changes(older: str, newer: str) -> bool:
    """Whether `newer`, on the subject of `older`, changes it (see the module)."""
    added = _words(newer) - _words(older)
    if not added:
        return False
    if _CHANGE_CUE.search(newer) is not None:
        return True
    a, b = subject_words(older), subject_words(newer)
    shared = len(a & b) / max(1, min(len(a), len(b)))
    swapped = len(a - b) <= VALUE_WORDS and len(b - a) <= VALUE_WORDS
    return shared >= SAME_SHAPE and swapped and any(not w.isdigit() for w in added)


# Raw SQL: pairwise cosines of a handful of rows, and each captured prompt's
# superseded neighbours, by their stored vectors (the ORM has no pair join).
# A session's work (source 'session': what was done and fixed then) is a record
# of its time, never a statement a later one changes: two fixes that both say
# "changed" are two events, not a decision and its change.
_PAIRS_SQL = """
    SELECT a.id, b.id, a.text, b.text, a.created_at, b.created_at, FALSE, NULL::bigint
    FROM memories_memory a
    JOIN memories_memory b ON b.id = ANY(%(ids)s) AND b.id > a.id
    WHERE a.id = ANY(%(ids)s) AND a.workspace_id = %(ws)s AND b.workspace_id = %(ws)s
      AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL
      AND a.embedding_model = b.embedding_model AND a.norm_hash <> b.norm_hash
      AND a.source <> 'session' AND b.source <> 'session'
      AND 1 - (a.embedding <=> b.embedding) >= %(t)s
    UNION ALL
    SELECT p.id, s.id, p.text, s.text, p.created_at, s.valid_to, TRUE, s.superseded_by_id
    FROM memories_memory p
    JOIN (
        SELECT s0.* FROM memories_memory s0
        WHERE s0.workspace_id = %(ws)s AND s0.valid_to IS NOT NULL
          AND s0.superseded_by_id IS NOT NULL AND s0.forgotten_at IS NULL
          AND s0.embedding IS NOT NULL
        ORDER BY s0.valid_to DESC LIMIT %(scan)s
    ) s ON s.valid_to > p.created_at AND s.embedding_model = p.embedding_model
    WHERE p.id = ANY(%(ids)s) AND p.workspace_id = %(ws)s AND p.embedding IS NOT NULL
      AND p.source = 'hook' AND p.compartment = ''
      AND 1 - (p.embedding <=> s.embedding) >= %(t)s
"""


def currency_of(*, workspace: Workspace, ids: Iterable[int]) -> Currency:
    """Which of `ids` are stale and which replace them (see the module)."""
    wanted = sorted(set(ids))
    currency = Currency()
    if len(wanted) < 1:
        return currency
    with connection.cursor() as cursor:
        cursor.execute(
            _PAIRS_SQL,
            {"ids": wanted, "ws": workspace.pk, "t": SUBJECT_COSINE, "scan": SUPERSEDED_SCAN},
        )
        rows = cursor.fetchall()
    # Oldest pairs first, so an entry's newest replacement is the one kept.
    for row in sorted(rows, key=lambda r: (max(r[4], r[5]), r[0], r[1])):
        _pair(currency, row, set(wanted))
    return currency


def _pair(currency: Currency, row: tuple[Any, ...], wanted: set[int]) -> None:
    a, b, a_text, b_text, a_at, b_at, superseded, replacement = row
    if not same_subject(a_text, b_text):
        return
    if superseded:
        # A captured prompt on the subject of an entry closed after it was typed.
        if replacement is not None and replacement != a:
            currency.stale[a] = int(replacement)
            if replacement in wanted:
                currency.replaces[int(replacement)] = a
        return
    older, newer = (a, b) if (a_at, a) < (b_at, b) else (b, a)
    texts = {a: a_text, b: b_text}
    if not changes(texts[older], texts[newer]):
        return
    currency.stale[older] = newer
    currency.replaces[newer] = older


def currency_ranked(
    weighed: list[tuple[float, Any, Any]], ids: Mapping[int, int], currency: Currency
) -> list[tuple[float, Any, Any]]:
    """`weighed` ((score, row, item), best first) with each stale entry below the one that
    replaces it: the stale one weighs STALE_WEIGHT, its replacement at least its old score.

    `ids`: each position of `weighed` → its memory id.
    """
    if not currency.stale:
        return weighed
    score_of = {ids[n]: w[0] for n, w in enumerate(weighed)}
    adjusted = []
    for n, (score, row, item) in enumerate(weighed):
        memory_id = ids[n]
        replaced = currency.replaces.get(memory_id)
        if replaced is not None and replaced in score_of:
            score = max(score, score_of[replaced] + LIFT)
        if memory_id in currency.stale:
            score *= STALE_WEIGHT
        adjusted.append((score, row, item))
    adjusted.sort(key=lambda w: -w[0])
    return adjusted


T = TypeVar("T")


def current_first(
    top: list[tuple[float, T]], ids: list[int], currency: Currency
) -> list[tuple[float, T]]:
    """`top` ((score, item), best first; `ids` their memory ids) with every entry that
    replaces a stale one placed just above it, whatever moved them since
    (the prompt ranking weighs captured prompts less, whichever is current)."""
    out = list(zip(ids, top, strict=True))
    for _ in range(len(currency.stale)):
        moved = False
        at = {memory_id: n for n, (memory_id, _) in enumerate(out)}
        for stale, newer in currency.stale.items():
            if stale in at and newer in at and at[newer] > at[stale]:
                entry = out.pop(at[newer])
                score = out[at[stale]][1][0] + LIFT
                out.insert(at[stale], (newer, (score, entry[1][1])))
                moved = True
                break
        if not moved:
            break
    return [entry for _, entry in out]
