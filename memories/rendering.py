"""Text shapes the model sees: ages, index lines, the recall block.

Deterministic by construction — same entries, same bytes — and with ages
bucketed, so a block does not change from one turn to the next merely
because a minute passed (the harness's prompt cache survives).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from contexts.hooks import inert
from memories import lexical
from memories.models import Memory
from memories.provenance import source_label
from memories.selectors.prompts import is_prompt_memory


def age_label(then: datetime, now: datetime) -> str:
    seconds = max(0.0, (now - then).total_seconds())
    hours = seconds / 3600
    if hours < 1:
        return "<1h"
    if hours < 24:
        return f"{int(hours)}h"
    days = hours / 24
    if days < 30:
        return f"{int(days)}d"
    if days < 365:
        return f"{int(days // 30)}mo"
    return f"{int(days // 365)}y"


def one_line(text: str, limit: int) -> str:
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)].rstrip() + "…"


def _marked(memory: Memory, marks: Mapping[int, str] | None) -> str:
    """ " | <mark>" when the entry is marked (selectors.currency: stale or current), else ""."""
    mark = (marks or {}).get(int(memory.pk), "")
    return f" | {mark}" if mark else ""


def index_block(
    memories: Sequence[Memory],
    *,
    now: datetime,
    budget_chars: int,
    marks: Mapping[int, str] | None = None,
) -> tuple[str, list[int]]:
    """`#id | age | source | one line` per entry (`| mark |` before the line when the
    entry has one), the whole block within the budget."""
    lines: list[str] = []
    ids: list[int] = []
    used = 0
    for memory in memories:
        source = source_label(memory)
        head = (
            f"#{memory.pk} | {age_label(memory.created_at, now)} | {source}"
            f"{_marked(memory, marks)} | "
        )
        room = budget_chars - used - len(head) - 1
        if room < 20:
            break
        line = head + one_line(memory.text, min(room, 160))
        lines.append(line)
        ids.append(int(memory.pk))
        used += len(line) + 1
    return "\n".join(lines), ids


def recall_block(
    memories: Sequence[Memory],
    *,
    now: datetime,
    budget_chars: int,
    prompt_share: int | None = None,
    marks: Mapping[int, str] | None = None,
) -> tuple[str, list[int]]:
    """Whole texts, best first, as many as fit in the budget (none is cut). An entry's
    mark (`marks`: which of two conflicting entries is current) ends its header.

    With `prompt_share`, captured prompts hold at most one in that many of
    the entries the block shows: recall caps them in its ranking, but long
    entries that miss the budget would otherwise leave the short prompts a
    larger share. A prompt that does not fit yet waits for more entries.
    """
    parts: list[str] = []
    ids: list[int] = []
    used = 0
    prompts = 0
    waiting: list[Memory] = []

    def place(memory: Memory) -> bool:
        nonlocal used
        source = source_label(memory)
        entry = (
            f"[#{memory.pk} | {age_label(memory.created_at, now)} | {source}"
            f"{_marked(memory, marks)}]\n{inert(memory.text)}"
        )
        cost = len(entry) + (2 if parts else 0)
        if used + cost > budget_chars:
            return False  # a shorter one further down may still fit
        parts.append(entry)
        ids.append(int(memory.pk))
        used += cost
        return True

    def room_for_prompt() -> bool:
        return prompt_share is None or (prompts + 1) * prompt_share <= len(parts) + 1

    for memory in memories:
        if prompt_share is not None and is_prompt_memory(memory):
            waiting.append(memory)
        elif not place(memory):
            continue
        while waiting and room_for_prompt():
            prompts += place(waiting.pop(0))
    return "\n\n".join(parts), ids


# Words too common to be worth marking in a search result.
_UNMARKED = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "with",
        "this",
        "that",
        "from",
        "what",
        "when",
        "where",
        "which",
        "who",
        "how",
        "why",
        "does",
        "did",
        "not",
        "you",
        "your",
        "our",
        "its",
        "has",
        "have",
        "had",
        "can",
        "into",
        "out",
        "about",
    ]
)


def marked_terms(query: str, contains: str = "") -> list[str]:
    """What a search result marks: the query's own terms (as recall's lexical arm
    reads them) and the substring filter, longest first so a whole path wins."""
    parsed = lexical.parse_query(query)
    terms = [
        w
        for w in (parsed.written.get(t, t) for t in parsed.terms if not lexical.is_exact_form(t))
        if (len(w) >= 3 or lexical.is_cjk(w)) and w not in _UNMARKED
    ]
    if contains:
        terms.append(contains)
    return sorted(set(terms), key=lambda t: (-len(t), t))


def highlighted(text: str, terms: Sequence[str], limit: int = 240) -> SafeString:
    """`text` cut to `limit` characters around its first match, escaped, with
    each match of `terms` in <mark>.

    The matching runs over the raw text and every piece is escaped on its
    own, so a term can never match inside an entity or a tag it made.
    """
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE) if terms else None
    first = pattern.search(text) if pattern else None
    start = 0
    if first and first.end() > limit - 20:
        start = max(0, first.start() - limit // 4)
    snippet = text[start : start + limit]
    prefix = "…" if start else ""
    suffix = "…" if start + limit < len(text) else ""
    if pattern is None:
        return format_html("{}{}{}", prefix, snippet, suffix)
    pieces: list[str] = [escape(prefix)]
    at = 0
    for match in pattern.finditer(snippet):
        pieces.append(escape(snippet[at : match.start()]))
        pieces.append(format_html("<mark>{}</mark>", match.group()))
        at = match.end()
    pieces.append(escape(snippet[at:]) + escape(suffix))
    return mark_safe("".join(pieces))
