"""`memflow bench capture`: do captured prompts crowd out the facts that answer them?

Facts first (remembered by the model), then many sessions ask about some of
them in other words through the real user-prompt hook (each prompt recalled
for and captured, as a harness's would be), then new sessions ask again in
still other words. For each new question: is the answering fact the first
entry of the recall block, and what share of the block is captured prompts.
An earlier turn whose block showed the fact ends citing it as #id, as the
recall protocol asks a model to; one whose index of pointers showed it reads
it in full first (`get_memory`), then cites it (`--no-cite`: never). Questions on topics
nobody asked about before are scored apart (`unasked`): what earlier
questions carry must not push their answers down.
Before any prompt is stored, recall alone is scored for the new question and
for its bare subject: the gap is what the request's wording costs.

The corpus is real text: Debian's package descriptions by default (the
quality bench's, fetched with apt), or `--corpus DIR` holding a
`corpus.jsonl` (`{id, text}`) and a `queries.jsonl` (`{kind, query,
answers}`) such as commits-curl, whose `summary` queries are the topics.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contexts.models import AgentSession
from contexts.secrets import find_secret
from contexts.tenancy import services as context_services
from memories import selectors, services
from memories.bench.corpus import load_corpus
from memories.bench.run import (
    bench_user,
    bench_workspace,
    data_dir,
    machine,
    progress_printer,
    say,
    vector_cache,
)
from memories.models import Memory

# Earlier sessions ask with these (one session per wording and topic) ...
EARLIER = (
    "{s}?",
    "remind me about {s}",
    "what do we know about {s}?",
    "I need the notes on {s} again",
    "can you look up {s} for me",
    "quick question: {s}, what was it?",
)
# ... and a repeat, near-identical to the first wording (collapsed, not a second slot).
REPEAT = "{s} ?"
# New sessions ask in words none of the earlier prompts used.
NEW = "Which entry do we have for this: {s}. Tell me what you remember."


@dataclass
class Topic:
    key: str  # the answering fact's key
    subject: str  # what the questions are about, in other words than the fact


def _debian(facts: int) -> tuple[dict[str, str], list[Topic]]:
    """The quality bench's sample of `facts` descriptions (its vectors cached alike)."""
    say(f"reading {facts:,} Debian package descriptions…")
    docs = load_corpus(data_dir(), size=facts, queries_per_kind=1).docs
    topics = [Topic(key=d.key, subject=d.synopsis.rstrip(".")) for d in docs]
    random.Random(7).shuffle(topics)
    return {d.key: d.text for d in docs}, topics


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _from_dir(corpus: Path, facts: int) -> tuple[dict[str, str], list[Topic]]:
    """A commits-curl shaped corpus: the facts, and one topic per single-answer `summary` query."""
    say(f"reading {corpus}…")
    # Remember refuses a text that looks like it holds a secret (one curl
    # commit has a password in a URL), and with it its whole batch.
    texts = {
        str(r["id"]): str(r["text"])
        for r in _jsonl(corpus / "corpus.jsonl")
        if not find_secret(str(r["text"]))
    }
    keys = list(texts)[:facts]
    kept = set(keys)
    topics = [
        Topic(key=str(q["answers"][0]), subject=str(q["query"]).rstrip("."))
        for q in _jsonl(corpus / "queries.jsonl")
        if q.get("kind") == "summary" and len(q["answers"]) == 1 and str(q["answers"][0]) in kept
    ]
    return {k: texts[k] for k in keys}, topics


def _remember_facts(workspace: Any, facts: dict[str, str]) -> dict[str, int]:
    """The facts, remembered by the model through the bulk path; key → memory id."""
    embedder = selectors.embedder_for(workspace)
    keys = list(facts)
    say(f"embedding {len(keys):,} facts (cached on disk after the first run)…")
    vectors = vector_cache(embedder).get(
        [facts[k] for k in keys], progress=progress_printer("embed")
    )
    ids: dict[str, int] = {}
    show = progress_printer("remember")
    started = time.monotonic()
    for start in range(0, len(keys), 256):
        chunk = keys[start : start + 256]
        results = services.memory_remember_bulk(
            workspace=workspace,
            items=[services.RememberInput(text=facts[k], metadata={"bench_key": k}) for k in chunk],
            vectors=vectors[start : start + 256],
            vectors_model=embedder.model_id,
        )
        for key, result in zip(chunk, results, strict=True):
            ids[key] = int(result.memory.pk)
        show(start + len(chunk), len(keys), time.monotonic() - started)
    return ids


def bench_capture(
    *, corpus: Path | None, facts: int, topics: int, sessions: int = 20, cite: bool = True
) -> dict[str, Any]:
    """Facts, earlier prompts about `topics` of them, then new questions (see the module).

    `cite`: each earlier turn whose block showed the answering fact ends with
    the model citing it as #id (as the recall protocol asks), so recall can
    follow the earlier question to its answer (selectors.answered).
    """
    texts, all_topics = _from_dir(corpus, facts) if corpus else _debian(facts)
    chosen = all_topics[:topics]
    # Never asked before: what carried answers may cost the questions they do not match.
    unasked = all_topics[topics : topics + max(topics // 2, 1)]
    if not chosen:
        raise ValueError("the corpus gives no topics to ask about")
    workspace, _ = bench_workspace(f"bench-capture-{int(time.time())}")
    user = bench_user()
    key = context_services.apikey_create(
        user=user, workspace=workspace, scope="write", name="bench-capture"
    )
    try:
        ids = _remember_facts(workspace, texts)
        # Before any prompt is captured: how often recall alone puts the fact
        # first, for the new question and for its bare subject (the gap is
        # what the request's wording costs).
        alone = _first_alone(workspace, chosen, ids, NEW)
        alone_unasked = _first_alone(workspace, unasked, ids, NEW)
        bare = _first_alone(workspace, chosen, ids, "{s}")

        turns = _Turns(user=user, api_key=key.key, workspace=workspace)
        asked, cited, expanded = _ask_earlier(turns, chosen, ids, sessions=sessions, cite=cite)
        result = _ask_new(turns.ask, workspace, chosen, ids, "new", alone)
        others = _ask_new(turns.ask, workspace, unasked, ids, "unasked", alone_unasked)
        result.update(
            {
                "unasked": {
                    k: others[k]
                    for k in (
                        "queries",
                        "fact_first",
                        "fact_first_without_prompts",
                        "fact_first_where_first_without_prompts",
                    )
                },
                "earlier_turns_citing_the_fact": cited,
                "of_which_read_from_the_index": expanded,
                "fact_first_bare_subject_without_prompts": round(len(bare) / len(chosen), 4),
                "corpus": str(corpus) if corpus else "debian (apt)",
                "facts": len(texts),
                "topics": len(chosen),
                "earlier_prompts": asked,
                "captured_entries": Memory.objects.filter(
                    workspace=workspace, source="hook", compartment=""
                ).count(),
                "machine": machine(),
            }
        )
        return result
    finally:
        key.key.delete()
        workspace.delete()


@dataclass
class _Turns:
    """A harness's turns through the real hook pipeline: a prompt, and the answer's end."""

    user: Any
    api_key: Any
    workspace: Any

    def ask(self, session: str, prompt: str) -> list[int]:
        """The user-prompt hook; the ids of the recall block it answered."""
        return self.shown(session, prompt)["memflow:recall"]

    def shown(self, session: str, prompt: str) -> dict[str, list[int]]:
        """The user-prompt hook; the ids of its recall block and of its index of pointers."""
        from contexts.hooks.pipeline import hook_handle

        payload = {"session_id": session, "prompt": prompt, "hook_event_name": "UserPromptSubmit"}
        outcome = hook_handle(
            event="user-prompt", payload=payload, user=self.user, api_key=self.api_key
        )
        shown: dict[str, list[int]] = {"memflow:recall": [], "memflow:index": []}
        for block in outcome.blocks:
            if block.name in shown:
                shown[block.name] = list(block.memory_ids)
        return shown

    def expand(self, session: str, memory_id: int) -> None:
        """The model reads an index pointer in full, as `get_memory` or `memflow get` does."""
        from contexts.models import AgentSession
        from memories import services
        from memories.models import InjectionEvent

        services.ledger_record(
            workspace=self.workspace,
            session=AgentSession.objects.get(workspace=self.workspace, external_id=session),
            memory_ids=[memory_id],
            kind=InjectionEvent.Kind.EXPANDED,
        )

    def cite(self, session: str, memory_id: int) -> None:
        """The Stop hook, the model's answer citing `memory_id` as the protocol asks."""
        from contexts.hooks.pipeline import hook_handle

        payload = {
            "session_id": session,
            "hook_event_name": "Stop",
            "last_assistant_message": f"That is in memory #{memory_id}.",
        }
        hook_handle(event="stop", payload=payload, user=self.user, api_key=self.api_key)


def _ask_earlier(
    turns: _Turns, chosen: list[Topic], ids: dict[str, int], *, sessions: int, cite: bool
) -> tuple[int, int, int]:
    """Each topic asked in every EARLIER wording and REPEAT, spread over `sessions`;
    returns how many prompts, how many turns ended citing the fact, and how
    many of those read it from the index of pointers first."""
    earlier = [
        (f"earlier-{(n * 7 + w) % sessions}", template.format(s=t.subject), ids[t.key])
        for n, t in enumerate(chosen)
        for w, template in enumerate((*EARLIER, REPEAT))
    ]
    random.Random(7).shuffle(earlier)
    show = progress_printer("earlier prompts")
    started = time.monotonic()
    cited = expanded = 0
    for n, (session, prompt, fact) in enumerate(earlier):
        shown = turns.shown(session, prompt)
        # The model answers from what it was shown, as the protocol asks: from
        # the block, or from an index pointer it reads in full first.
        if cite and fact in shown["memflow:index"]:
            turns.expand(session, fact)
            expanded += 1
        if cite and (fact in shown["memflow:recall"] or fact in shown["memflow:index"]):
            turns.cite(session, fact)
            cited += 1
        show(n + 1, len(earlier), time.monotonic() - started)
    return len(earlier), cited, expanded


def _first_alone(
    workspace: Any, chosen: list[Topic], ids: dict[str, int], wording: str
) -> set[str]:
    """The topics whose fact recall ranks first for `wording` while no prompt is stored."""
    first = set()
    for topic in chosen:
        query = wording.format(s=topic.subject)
        hits = selectors.memory_recall(workspace=workspace, query=query, k=1)
        if hits.hits and hits.hits[0].memory.pk == ids[topic.key]:
            first.add(topic.key)
    return first


def _ask_new(
    ask: Any,
    workspace: Any,
    chosen: list[Topic],
    ids: dict[str, int],
    prefix: str,
    alone: set[str],
) -> dict[str, Any]:
    """New sessions (`prefix`-n), four questions each; the blocks they got, scored.

    `alone`: the topics whose fact was first before any prompt was captured;
    of those, the share still first measures the crowding alone.
    """
    first = in_block = own = kept = 0
    shares: list[float] = []
    hook_ms: list[float] = []
    show = progress_printer("new questions")
    started = time.monotonic()
    for n, topic in enumerate(chosen):
        session = f"{prefix}-{n // 4}"
        asked = time.perf_counter()
        block = ask(session, NEW.format(s=topic.subject))
        hook_ms.append((time.perf_counter() - asked) * 1000)
        fact = ids[topic.key]
        first += bool(block) and block[0] == fact
        kept += topic.key in alone and bool(block) and block[0] == fact
        in_block += fact in block
        rows = {
            pk: (source, compartment, session_id)
            for pk, source, compartment, session_id in Memory.objects.filter(
                pk__in=block
            ).values_list("pk", "source", "compartment", "session_id")
        }
        captured = [i for i in block if rows[i][:2] == ("hook", "")]
        mine = AgentSession.objects.filter(workspace=workspace, external_id=session).first()
        own += sum(mine is not None and rows[i][2] == mine.pk for i in captured)
        shares.append(len(captured) / len(block) if block else 0.0)
        show(n + 1, len(chosen), time.monotonic() - started)
    count = max(len(chosen), 1)
    return {
        "bench": "capture",
        "queries": count,
        "fact_first": round(first / count, 4),
        "fact_in_block": round(in_block / count, 4),
        "fact_first_without_prompts": round(len(alone) / count, 4),
        "fact_first_where_first_without_prompts": round(kept / max(len(alone), 1), 4),
        "captured_share_mean": round(sum(shares) / count, 4),
        "captured_share_max": round(max(shares, default=0.0), 4),
        "blocks_over_a_third": sum(s > 1 / 3 + 1e-9 for s in shares),
        "own_session_prompts_recalled": own,
        # The whole user-prompt hook in-process (embedding, recall, capture, ledger).
        "hook_ms_p50": round(float(np.percentile(hook_ms, 50)), 1) if hook_ms else None,
        "hook_ms_p95": round(float(np.percentile(hook_ms, 95)), 1) if hook_ms else None,
        "targets": {"fact_first": ">= 0.95", "captured_share": "<= 1/3 of a block"},
    }
