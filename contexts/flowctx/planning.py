"""Which span of a session to fold next: a pure function over turn sizes and nodes.

flowctx plans in `agent/pre-step` and folds in the background; here the
plan is recomputed before every node a worker writes, so an interrupted or
superseded fold simply resumes from what is stored.

- Leaves (depth 0) cover consecutive whole user turns totalling at least
  `leaf_tokens` (estimated), never the last `keep_turns` turns.
- When `fanout` active nodes of one depth exist (and that depth is below
  `max_depth`), the oldest `fanout` condense into one node a level up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Turn:
    number: int
    tokens: float


@dataclass(frozen=True)
class Node:
    depth: int
    start: int
    end: int


@dataclass(frozen=True)
class FoldSettings:
    leaf_tokens: int = 40000
    keep_turns: int = 2
    fanout: int = 6
    max_depth: int = 1


@dataclass(frozen=True)
class Step:
    depth: int
    start: int
    end: int
    children: bool  # condenses active nodes of depth - 1 (else folds raw turns)


def node_id(depth: int, start: int, end: int) -> str:
    return f"d{depth}-{start}-{end}"


def plan_next(
    *,
    turns: Sequence[Turn],
    active: Sequence[Node],
    settings: FoldSettings,
    force: bool = False,
) -> Step | None:
    """The next node to write, or None when nothing is due."""
    fanout = max(settings.fanout, 2)
    for depth in range(settings.max_depth):
        level = sorted((n for n in active if n.depth == depth), key=lambda n: n.start)
        if len(level) >= fanout:
            group = level[:fanout]
            return Step(depth=depth + 1, start=group[0].start, end=group[-1].end, children=True)
    if not turns:
        return None
    covered = max((n.end for n in active), default=0)
    last = max(t.number for t in turns)
    foldable = [
        t
        for t in sorted(turns, key=lambda t: t.number)
        if covered < t.number <= last - settings.keep_turns
    ]
    total = 0.0
    for turn in foldable:
        total += turn.tokens
        if total >= settings.leaf_tokens:
            return Step(depth=0, start=foldable[0].number, end=turn.number, children=False)
    if force and foldable:
        return Step(depth=0, start=foldable[0].number, end=foldable[-1].number, children=False)
    return None
