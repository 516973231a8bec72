"""Which span of a session to fold next: a pure function over turn sizes and nodes.

flowctx plans in `agent/pre-step` and folds in the background; here the
plan is recomputed before every node a worker writes, so an interrupted or
superseded fold simply resumes from what is stored.

- Leaves (depth 0) cover consecutive whole user turns totalling at least
  `leaf_tokens` (estimated), never the last `keep_turns` turns.
- A forced fold (a compaction is imminent) with nothing to fold by that rule
  folds the turns still uncovered when they hold at least `leaf_steps` tool
  steps or a leaf's tokens — a headless run or a long tool loop is one long
  turn, and the compaction removes its history all the same; a leaf over a
  turn that has grown since it was written is folded again.
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
    steps: int = 0  # tool calls in the turn


@dataclass(frozen=True)
class Node:
    depth: int
    start: int
    end: int
    tokens: float = 0.0  # the history it folded, as estimated when it was written


@dataclass(frozen=True)
class FoldSettings:
    leaf_tokens: int = 40000
    keep_turns: int = 2
    fanout: int = 6
    max_depth: int = 1
    leaf_steps: int = 5


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
    if force:
        return _long_turns(turns, active, covered, settings)
    return None


def _long_turns(
    turns: Sequence[Turn], active: Sequence[Node], covered: int, settings: FoldSettings
) -> Step | None:
    """The kept turns, folded after all when they are long (see the module's docstring)."""
    ordered = sorted(turns, key=lambda t: t.number)
    pending = [t for t in ordered if t.number > covered]
    start = pending[0].number if pending else None
    last_leaf = max((n for n in active if n.depth == 0), key=lambda n: n.end, default=None)
    if not pending and last_leaf is not None and last_leaf.end == ordered[-1].number:
        # Nothing new, unless the leaf's own turns grew after it was written.
        span = [t for t in ordered if last_leaf.start <= t.number]
        if int(sum(t.tokens for t in span)) > last_leaf.tokens:
            pending, start = span, last_leaf.start
    if not pending or start is None:
        return None
    steps = sum(t.steps for t in pending)
    tokens = sum(t.tokens for t in pending)
    if steps < settings.leaf_steps and tokens < settings.leaf_tokens:
        return None
    return Step(depth=0, start=start, end=pending[-1].number, children=False)
