"""Questions lead to their answers: an earlier prompt carries what answered it.

A captured prompt rarely answers the next question (selectors.prompts), but
the turn it began often ended with the model citing, as #id, the memory that
did, or expanding it (the ledger's `cited` and `expanded` marks). When a query
is close to an earlier prompt, the memory that answered that prompt ranks
nearly as well as the prompt itself: the user's history of asking then leads
to the answers instead of crowding in front of them.

Only other sessions' prompts carry (the asking session has its own turns in
its transcript). A query about past requests wants the prompts themselves,
so nothing is carried for it. Only what the query's own arms found is
raised, so an answer is never one the recall's filters or the asker's
rights leave out.
"""

from __future__ import annotations

from typing import Any

from contexts.models import Workspace
from memflow_site.runtime.db import bound_rows
from memories.models import InjectionEvent, Memory
from memories.selectors.fusion import Fusion
from memories.selectors.prompts import PromptRanking, is_captured_prompt
from memories.selectors.search import _HIT, Seen

# How many of the best-ranked earlier prompts are followed to their answers.
CARRIED_PROMPTS = 10
# An answer ranks at this share of its earlier prompt's score: a little below
# the question's own match, so that a question about another subject, worded
# alike, rarely lifts its answer over the right one (capture bench,
# docs/PERFORMANCE.md).
CARRY = 0.8
# The marks that say which memory answered a turn.
ANSWER_KINDS = (InjectionEvent.Kind.CITED, InjectionEvent.Kind.EXPANDED)

_SESSION = _HIT.index("session_id")


def answers_carried(
    *,
    workspace: Workspace,
    fusion: Fusion,
    seen: dict[int, Seen],
    policy: PromptRanking,
    query: str,
) -> None:
    """The candidates that answered one of the best-ranked earlier prompts, raised
    to CARRY of that prompt's score in `fusion.candidates`, which stay best first.

    Only candidates: an earlier question vouches for an answer the query's
    own arms found, it does not bring in one they did not (a question about
    another subject, worded alike, would). One statement, and only when an
    earlier prompt is among the candidates.
    """
    if not policy.behind_answers(query):
        return
    prompts: dict[int, float] = {}
    for s in fusion.candidates:
        row = seen[s.id].row
        if is_captured_prompt(row) and row[_SESSION] not in (None, policy.session_id):
            prompts[s.id] = s.score
            if len(prompts) == CARRIED_PROMPTS:
                break
    if not prompts:
        return
    by_id = {s.id: s for s in fusion.candidates}
    raised = False
    for prompt_id, memory_id in _answers(workspace, list(prompts), list(by_id)):
        scored = by_id[memory_id]
        if prompts[prompt_id] * CARRY > scored.score:
            scored.score = prompts[prompt_id] * CARRY
            scored.answered = prompt_id
            raised = True
    if raised:
        # Stable: equal scores keep the arms' order.
        fusion.candidates.sort(key=lambda s: -s.score)


def _answers(
    workspace: Workspace, prompt_ids: list[int], candidate_ids: list[int]
) -> list[tuple[int, int]]:
    """(prompt id, memory id) for each of `candidate_ids` cited or expanded in the
    turn one of the prompts began: its session, after it, before that session's
    next prompt."""
    memory = Memory._meta.db_table
    params: dict[str, Any] = {
        "ws": workspace.pk,
        "prompts": prompt_ids,
        "candidates": candidate_ids,
        "kinds": list(ANSWER_KINDS),
    }
    # Uses index: injection_session_memory_idx (each prompt's session, the candidates).
    sql = f"""
        SELECT DISTINCT p.id, e.memory_id
        FROM {memory} p
        JOIN {InjectionEvent._meta.db_table} e
          ON e.session_id = p.session_id AND e.memory_id = ANY(%(candidates)s)
          AND e.kind = ANY(%(kinds)s) AND e.at >= p.created_at AND e.memory_id <> p.id
        WHERE p.workspace_id = %(ws)s AND p.id = ANY(%(prompts)s)
          AND NOT EXISTS (
            SELECT 1 FROM {memory} q
            WHERE q.session_id = p.session_id AND q.source = 'hook' AND q.compartment = ''
              AND q.created_at > p.created_at AND q.created_at <= e.at
          )
    """
    return [(int(p), int(m)) for p, m in bound_rows(sql, params)]
