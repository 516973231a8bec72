"""Answers before questions: how captured prompts compete in recall.

Every prompt a user types is captured (source `hook`, no compartment), so the
user's own history stays searchable. But an earlier question is rarely what
answers the next one, and questions worded like the query rank above the fact
they asked about. This step, run on recall's ranking once it is weighted,
keeps them from crowding out answers:

- the asking session's own prompts are never recalled back to it (the
  harness has them in its transcript already);
- near-identical earlier prompts take one slot between them;
- captured prompts count for less than facts, decisions, lessons and
  checkpoints, and hold at most a quarter of any prefix of the ranking (so a
  workspace of nothing but earlier questions recalls none of them);
- unless the query asks about past requests ("what did I ask…"): then the
  prompts are what it seeks and rank first.

It reads only the columns the arms already returned: no statement of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from memories import lexical
from memories.models import Memory
from memories.selectors.search import _HIT

# What a captured prompt's score is multiplied by (or, for a query about past
# requests, everything else's).
PROMPT_WEIGHT = 0.6
# Captured prompts hold at most one in this many places of any prefix of the
# ranking: a block renders a prefix less the entries too long for its budget,
# and prompts are short, so a block stays under a third of them.
PROMPT_SHARE = 4
# A recall block shows at most one captured prompt in this many entries
# (rendering.recall_block), whatever the budget left out.
BLOCK_PROMPT_SHARE = 3
# Two prompts whose word sets overlap this much (Jaccard) are one question asked again.
NEAR_IDENTICAL = 0.75

_SOURCE, _COMPARTMENT, _SESSION, _TEXT = (
    _HIT.index(n) for n in ("source", "compartment", "session_id", "text")
)

_PAST_REQUEST = re.compile(
    r"\b(what|which|when|how)\b[^.?!]{0,40}\b(did|have|had)\s+i\s+(already\s+)?"
    r"(ask|asked|say|said|request|requested|type|typed|want|wanted)\b"
    r"|\b(earlier|before|previously|last\s+time|yesterday)\s*,?\s+i\s+(asked|said|requested|typed)\b"
    r"|\bi\s+(asked|requested)\s+(you\s+)?(earlier|before|previously|last\s+time)\b"
    r"|\bdid\s+i\s+(already\s+|ever\s+)?ask\b"
    r"|\bmy\s+(previous|last|earlier|prior|past|old)\s+(questions?|requests?|prompts?|asks?)\b"
    r"|\b(questions?|requests?|prompts?)\s+i\s+(asked|made|typed|sent)\b"
    # Chinese: "I asked before", "my last question", "what I asked just now"...
    r"|我(之前|以前|上次|刚才|刚刚|先前|曾经|早先|前面|昨天)(问|提|说|要求|请求)"
    r"|我(问|提)过"
    r"|(之前|以前|上次|上一个|上一次|前面|先前|刚才)的?(问题|提问|请求|需求)",
    re.IGNORECASE,
)


def asks_past_requests(query: str) -> bool:
    """Whether the query asks about the user's own earlier requests."""
    return _PAST_REQUEST.search(query) is not None


@dataclass(frozen=True)
class PromptRanking:
    """How a recall ranks captured prompts (see the module's docstring).

    `session_id`: the asking session, whose own prompts are left out.
    `answers_first`: demote, collapse and cap earlier prompts; off, they
    compete like any entry (the session's own are still left out).
    """

    session_id: int | None = None
    answers_first: bool = True

    def behind_answers(self, query: str) -> bool:
        """Whether earlier prompts stand behind answers for `query`: not when
        turned off, nor when the query asks about past requests."""
        return self.answers_first and not asks_past_requests(query)


def _captured(source: object, compartment: object) -> bool:
    """A prompt a hook captured: source `hook` with no compartment (a checkpoint has one)."""
    return source == "hook" and not compartment


def is_captured_prompt(row: Sequence[object]) -> bool:
    return _captured(row[_SOURCE], row[_COMPARTMENT])


def is_prompt_memory(memory: Memory) -> bool:
    return _captured(memory.source, memory.compartment)


def _words(text: str) -> frozenset[str]:
    return frozenset(lexical.tokenize(text, cjk_unigrams=True))


def _near_identical(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / len(a | b) >= NEAR_IDENTICAL


T = TypeVar("T")


def prompts_ranked(
    *,
    ranked: Sequence[tuple[float, Sequence[object], T]],
    query: str,
    policy: PromptRanking,
    k: int,
) -> list[tuple[float, T]]:
    """The top `k` of `ranked` ((score, row, item), best first), earlier prompts in their place.

    Returns (score, item) pairs, best first.
    """
    past = asks_past_requests(query)
    kept: list[tuple[float, bool, T]] = []
    seen_prompts: list[frozenset[str]] = []
    for score, row, item in ranked:
        prompt = is_captured_prompt(row)
        if prompt and policy.session_id is not None and row[_SESSION] == policy.session_id:
            continue
        if prompt and policy.answers_first:
            words = _words(str(row[_TEXT]))
            if any(_near_identical(words, w) for w in seen_prompts):
                continue
            seen_prompts.append(words)
        if policy.answers_first and prompt != past:
            score *= PROMPT_WEIGHT
        kept.append((score, prompt, item))
    # A stable sort: equal scores keep the arms' order.
    kept.sort(key=lambda s: -s[0])
    if not policy.answers_first or past:
        return [(score, item) for score, _, item in kept[:k]]
    return _capped(kept, k)


def _capped(kept: list[tuple[float, bool, T]], k: int) -> list[tuple[float, T]]:
    """The top `k`, captured prompts at most one place in PROMPT_SHARE of any prefix.

    A prompt that would exceed its share waits for the next place it fits;
    one that never fits is left out (an earlier question answers nothing).
    """
    out: list[tuple[float, T]] = []
    waiting: list[tuple[float, T]] = []
    prompts = 0

    def fits() -> bool:
        return (prompts + 1) * PROMPT_SHARE <= len(out) + 1

    for score, prompt, item in kept:
        while waiting and len(out) < k and fits():
            out.append(waiting.pop(0))
            prompts += 1
        if len(out) >= k:
            break
        if not prompt:
            out.append((score, item))
        elif fits():
            out.append((score, item))
            prompts += 1
        else:
            waiting.append((score, item))
    while waiting and len(out) < k and fits():
        out.append(waiting.pop(0))
        prompts += 1
    return out
