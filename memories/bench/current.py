"""`memflow bench current`: is a decision's change recalled before the decision it replaced?

The labelled set and its rules are in `memories.bench.current_set`. Each
round fills a fresh workspace, through the path a user's memories take
(`memory_remember`: dedupe included), with one case of every subject — its
old decision, then its change — and asks each case's question as a hook's
recall does (the same k and prompt ranking). A case is right when the change
ranks above the old decision, or the old decision is absent and the change
present ("current first").

Prints the development split; the held-out split only with `held_out=True`
(`--held-out`), which is not to be run while tuning.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import transaction

from memories import selectors, services
from memories.bench.current_set import SUBJECTS, Case, cases
from memories.bench.run import bench_user, bench_workspace, machine
from memories.models import Memory
from memories.services.inputs import RememberInput

K = 12  # the hook's default hook_recall_k


def _rounds(chosen: list[Case]) -> list[list[Case]]:
    """The cases split so no two of one subject share a round (a subject's cases chain)."""
    rounds: list[list[Case]] = []
    for case in chosen:
        for r in rounds:
            if all(c.subject != case.subject for c in r):
                r.append(case)
                break
        else:
            rounds.append([case])
    return rounds


def _remember(workspace: Any, user: Any, text: str, typed: bool) -> int:
    item = RememberInput(text=text, source="hook" if typed else "model")
    return int(services.memory_remember(workspace=workspace, item=item, user=user).memory.pk)


def _found(hits: list[int], ids: set[int]) -> int | None:
    return next((n for n, i in enumerate(hits) if i in ids), None)


def _run_round(cases_: list[Case], name: str) -> list[dict[str, Any]]:
    user = bench_user()
    workspace, _ = bench_workspace(name)
    with transaction.atomic():
        Memory.objects.filter(workspace=workspace).delete()
    old_ids = {c: _remember(workspace, user, c.old, c.old_typed) for c in cases_}
    new_ids = {c: _remember(workspace, user, c.new, c.new_typed) for c in cases_}
    rows = []
    for case in cases_:
        result = selectors.memory_recall(
            workspace=workspace,
            query=case.query,
            k=K,
            prompts=selectors.PromptRanking(),
        )
        hits = [int(h.memory.pk) for h in result.hits]
        old_texts = {old_ids[case]}
        # A fold keeps one entry: whichever text it holds decides.
        holds_new = {
            int(h.memory.pk) for h in result.hits if h.memory.text.strip() == case.new.strip()
        }
        new_at = _found(hits, {new_ids[case]} & holds_new or holds_new)
        old_at = _found(hits, old_texts - holds_new)
        right = new_at is not None and (old_at is None or new_at < old_at)
        rows.append(
            {
                "subject": case.subject,
                "query": case.query,
                "old_rank": None if old_at is None else old_at + 1,
                "new_rank": None if new_at is None else new_at + 1,
                "right": right,
            }
        )
    return rows


def bench_current(*, held_out: bool = False, verbose: bool = False) -> dict[str, Any]:
    """Current-first rate on the development split (and the held-out one when asked)."""
    started = time.perf_counter()
    splits = {"dev": [c for c in cases() if not c.held_out]}
    if held_out:
        splits["held_out"] = [c for c in cases() if c.held_out]
    report: dict[str, Any] = {
        "bench": "current",
        "machine": machine(),
        "subjects": len(SUBJECTS),
    }
    for split, chosen in splits.items():
        rows: list[dict[str, Any]] = []
        for n, round_ in enumerate(_rounds(chosen)):
            rows += _run_round(round_, f"bench-current-{split}-{n}")
        right = sum(r["right"] for r in rows)
        report[split] = {
            "cases": len(rows),
            "current_first": right,
            "rate": round(right / len(rows), 4) if rows else None,
            **({"wrong": [r for r in rows if not r["right"]]} if verbose else {}),
        }
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report
