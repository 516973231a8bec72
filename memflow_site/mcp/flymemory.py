"""FlyMemory's sixteen tools, with FlyMemory's names and argument shapes.

A FlyMemory client (`mcp__flymemory__flymemory_*`, its hooks) works
unchanged: the same arguments are accepted and the text reads the same way
(`[NEW #12] …`, `[#12 | active | …] …`). Every tool calls what the REST
endpoint of the same operation calls (memories/api/memories.py), with that endpoint's
input serializer, rehearsal and ledger marks; the text comes with the REST
JSON of the result as structured content. Optional memflow extras
(`session_id`, `inject`, `dry_run`, `text`) never change a FlyMemory call's
meaning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone
from mcp.server.fastmcp import Context
from mcp.types import CallToolResult

from contexts.errors import Invalid
from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.knobs import knob
from contexts.tenancy.selectors import Access
from memflow_site.mcp.runner import Answer, Call, run_tool, validated
from memflow_site.porting.flymemory import split_tags
from memories import rendering, selectors, services
from memories.api.memories import (
    AutoApi,
    MemoryDetailApi,
    MemoryListCreateApi,
    MemorySupersedeApi,
    RecallInputSerializer,
    memory_json,
    remember_json,
)
from memories.api.triage import ConflictsApi
from memories.api.upkeep import CleanupApi, ConsolidateApi, SessionPackApi
from memories.decay import VALUABLE_SOURCES
from memories.models import InjectionEvent, Memory

_OUTCOME_LABELS = {"created": "NEW", "strengthened": "STRENGTHENED", "merged": "MERGED"}


# --- text shapes ---------------------------------------------------------------------


def _source(memory: Memory) -> str:
    return memory.source + (f":{memory.app}" if memory.app else "")


def _age(memory: Memory, now: datetime) -> str:
    return rendering.age_label(memory.created_at, now)


def _state(memory: Memory) -> str:
    return f"superseded by #{memory.superseded_by_id}" if memory.valid_to else "active"


def _remembered_line(result: services.RememberResult) -> str:
    label = _OUTCOME_LABELS[result.outcome]
    note = "" if result.outcome == "created" else " (existing entry updated in place)"
    line = f"[{label} #{result.memory.pk}{note}] {rendering.one_line(result.memory.text, 80)}"
    if result.superseded:
        line += " | supersedes " + ", ".join(f"#{i}" for i in result.superseded)
    return line


# --- recall, as RecallApi answers it -------------------------------------------------------


def _recall_values(
    *,
    query: str,
    top_k: int,
    mode: str,
    compartment: str = "",
    include_superseded: bool = False,
    budget_chars: int | None = None,
    session_id: str = "",
    inject: bool = False,
    project: str = "",
    as_of: str = "",
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "query": query,
        "k": top_k,
        "mode": mode,
        "include_superseded": include_superseded,
        "session": session_id,
        "inject": inject,
    }
    if compartment:
        values["compartment"] = compartment
    if project:
        values["project"] = project
    if as_of:
        values["as_of"] = as_of
    if budget_chars is not None:
        values["budget_chars"] = budget_chars
    return values


def _recall(
    call: Call, values: dict[str, Any], filters: selectors.MemoryFilters
) -> tuple[dict[str, Any], list[selectors.Hit], datetime]:
    """Recall as the REST endpoint answers it, for this tool call's session.

    An `inject` creates the session on first sight: only a harness injects.
    """
    return services.memory_recall_answer(
        workspace=call.workspace,
        session=call.session(values.get("session", ""), create=bool(values.get("inject"))),
        values=values,
        filters=dataclasses.replace(filters, viewer_id=call.user.pk),
    )


def _hit_lines(hits: Sequence[selectors.Hit], now: datetime, width: int = 160) -> list[str]:
    return [
        f"[#{hit.memory.pk} | {_state(hit.memory)} | score={hit.score:.4f} | "
        f"{_age(hit.memory, now)} | src={_source(hit.memory)} | "
        f"retention={hit.retention:.0%}] {rendering.one_line(hit.memory.text, width)}"
        for hit in hits
    ]


# --- the tools --------------------------------------------------------------------------------


async def flymemory_remember(
    ctx: Context,
    text: str,
    tags: str | list[str] = "",
    compartment: str = "",
    state_key: str = "",
    state_value: str = "",
    session_id: str = "",
    private: bool = False,
    ttl: str = "",
) -> CallToolResult:
    """Store a finding or decision (declarative, third person); a near-duplicate
    strengthens the existing entry. Lessons: compartment="lessons". tags: a list or
    comma-separated ("comp:X", "app:X"). state_key + state_value: an entity's value,
    superseding the current one. private: only you see it. ttl: "7d".
    """

    def body(call: Call) -> Answer:
        given = tags.split(",") if isinstance(tags, str) else [str(t) for t in tags]
        chosen, app, tag_list = split_tags(
            [t.strip() for t in given if t.strip()], compartment=compartment
        )
        data = validated(
            MemoryListCreateApi.InputSerializer,
            {
                "text": text,
                "compartment": chosen,
                "state_key": state_key,
                "state_value": state_value,
                "source": Memory.Source.MODEL,
                "app": app or call.app,
                "metadata": {"tags": tag_list} if tag_list else {},
                "session": session_id,
                "private": private,
                "ttl": ttl,
            },
        )
        session = call.session(session_id)
        item = data.to_input()
        if not item.app:
            item = dataclasses.replace(item, app=call.app_for(session))
        result = services.memory_remember(
            workspace=call.workspace, item=item, user=call.user, session=session
        )
        return Answer(_remembered_line(result), remember_json(result))

    return await run_tool(ctx, body, access=Access.WRITE)


async def flymemory_recall(
    ctx: Context,
    query: str,
    top_k: int = 5,
    include_superseded: bool = False,
    compartment: str = "",
    session_id: str = "",
    inject: bool = False,
    project: str = "",
    as_of: str = "",
) -> CallToolResult:
    """Hybrid recall: ids, scores, age, source. include_superseded for history;
    as_of: an ISO time. Nothing relevant? Rephrase before concluding it is not stored.
    """

    def body(call: Call) -> Answer:
        data = validated(
            RecallInputSerializer,
            _recall_values(
                query=query,
                top_k=top_k,
                mode="full",
                compartment=compartment,
                include_superseded=include_superseded,
                session_id=session_id,
                inject=inject,
                project=project,
                as_of=as_of,
            ),
        )
        answer, hits, now = _recall(call, data.validated_data, data.filters())
        text = "\n".join(_hit_lines(hits, now)) or "No relevant memories found."
        return Answer(text, answer)

    return await run_tool(ctx, body)


async def flymemory_auto(
    ctx: Context,
    context: str,
    response: str = "",
    top_k: int = 3,
    session_id: str = "",
) -> CallToolResult:
    """Recall for `context`, then store it (with `response`) as a hook capture:
    what a prompt hook calls every turn.
    """

    def body(call: Call) -> Answer:
        data = validated(
            AutoApi.InputSerializer,
            {
                **_recall_values(query=context, top_k=top_k, mode="full", session_id=session_id),
                "source": Memory.Source.HOOK,
                "app": call.app,
            },
        )
        values: dict[str, Any] = data.validated_data
        # As AutoApi: `source` and `app` describe the capture, not a recall filter.
        filters = dataclasses.replace(data.filters(), source=None, app=None)
        recall, hits, now = _recall(call, values, filters)
        lines = (
            ["RECALLED MEMORIES:", *(f"  {line}" for line in _hit_lines(hits, now, 80))]
            if hits
            else ["RECALL: no relevant memories for this topic."]
        )
        if hits:
            lines.append(
                "HINT: entries above are one-line summaries; fetch the full text with "
                "flymemory_get_memory(memory_id)."
            )
        text = f"{context} ||| {response}" if response.strip() else context
        session = call.session(session_id)
        result = services.memory_remember(
            workspace=call.workspace,
            item=services.RememberInput(
                text=text,
                compartment=values["capture_compartment"],
                source=values["source"],
                app=values["app"] or call.app_for(session),
            ),
            user=call.user,
            session=session,
        )
        lines.append(f"STORED: {_remembered_line(result)}")
        return Answer("\n".join(lines), {"recall": recall, "captured": remember_json(result)})

    return await run_tool(ctx, body, access=Access.WRITE)


async def flymemory_recall_index(
    ctx: Context,
    query: str,
    top_k: int = 10,
    compartment: str = "",
    budget_chars: int | None = None,
    session_id: str = "",
    inject: bool = False,
    project: str = "",
) -> CallToolResult:
    """A compact index of matches (#id | age | source | first words) within
    budget_chars; read an entry with flymemory_get_memory.
    """

    def body(call: Call) -> Answer:
        data = validated(
            RecallInputSerializer,
            _recall_values(
                query=query,
                top_k=top_k,
                mode="index",
                compartment=compartment,
                budget_chars=budget_chars,
                session_id=session_id,
                inject=inject,
                project=project,
            ),
        )
        answer, _, _ = _recall(call, data.validated_data, data.filters())
        return Answer(answer["block"] or "No matching memories.", answer)

    return await run_tool(ctx, body)


async def flymemory_recall_block(
    ctx: Context,
    query: str,
    budget_chars: int | None = None,
    top_k: int = 20,
    compartment: str = "",
    include_superseded: bool = False,
    session_id: str = "",
    inject: bool = False,
    project: str = "",
) -> CallToolResult:
    """The best matches in full, as many as fit budget_chars (what a prompt
    hook injects).
    """

    def body(call: Call) -> Answer:
        data = validated(
            RecallInputSerializer,
            _recall_values(
                query=query,
                top_k=top_k,
                mode="block",
                compartment=compartment,
                include_superseded=include_superseded,
                budget_chars=budget_chars,
                session_id=session_id,
                inject=inject,
                project=project,
            ),
        )
        answer, _, _ = _recall(call, data.validated_data, data.filters())
        return Answer(answer["block"] or "No relevant memories found.", answer)

    return await run_tool(ctx, body)


async def flymemory_get_memory(
    ctx: Context, memory_id: int, session_id: str = ""
) -> CallToolResult:
    """The full text and provenance of one memory (#id from recall)."""

    def body(call: Call) -> Answer:
        params = validated(MemoryDetailApi.GetParams, {"session": session_id})
        memory = selectors.memory_get(
            workspace=call.workspace, memory_id=memory_id, viewer_id=call.user.pk
        )
        services.ledger_record(
            workspace=call.workspace,
            session=call.session(params.validated_data.get("session", "")),
            memory_ids=[memory.pk],
            kind=InjectionEvent.Kind.EXPANDED,
        )
        now = timezone.now()
        head = [f"#{memory.pk}", f"src={_source(memory)}", f"age={_age(memory, now)}"]
        if memory.compartment:
            head.append(f"compartment={memory.compartment}")
        if memory.state_key:
            head.append(f"state={memory.state_key}")
        if memory.valid_to:
            head.append(f"SUPERSEDED by #{memory.superseded_by_id}")
        return Answer(f"[{' | '.join(head)}]\n{memory.text}", memory_json(memory, now=now))

    return await run_tool(ctx, body)


def one_memory_id(memory_id: int | None, alias: int | None) -> int:
    """The memory a tool acts on: `memory_id`, as every tool names it, or its older alias."""
    if memory_id is not None and alias is not None and memory_id != alias:
        raise Invalid(
            "memory_id and old_memory_id (its former name) name different memories; give one.",
            code="conflicting_ids",
        )
    found = memory_id if memory_id is not None else alias
    if found is None:
        raise Invalid("Name the memory to act on: memory_id.", code="memory_id_required")
    return found


async def flymemory_supersede(
    ctx: Context,
    memory_id: int | None = None,
    new_memory_id: int | None = None,
    text: str = "",
    session_id: str = "",
    old_memory_id: int | None = None,
) -> CallToolResult:
    """Retire memory_id (old_memory_id: its old name) for new_memory_id or a new `text`.
    It leaves default recall and stays in history."""

    def body(call: Call) -> Answer:
        retired = one_memory_id(memory_id, old_memory_id)
        values: dict[str, Any] = {"session": session_id}
        if new_memory_id is not None:
            values["by"] = new_memory_id
        if text:
            values["text"] = text
        data: dict[str, Any] = validated(MemorySupersedeApi.InputSerializer, values).validated_data
        memory = selectors.memory_get(
            workspace=call.workspace, memory_id=retired, viewer_id=call.user.pk
        )
        by = None
        if data.get("by") is not None:
            by = selectors.memory_get(
                workspace=call.workspace, memory_id=data["by"], viewer_id=call.user.pk
            )
        session = call.session(data.get("session", ""))
        successor = services.memory_supersede(
            workspace=call.workspace,
            memory=memory,
            by=by,
            text=data.get("text"),
            user=call.user,
            session=session,
            app=call.app_for(session),
            actor=_actor(call),
        )
        services.ledger_record(
            workspace=call.workspace,
            session=session,
            memory_ids=[memory.pk],
            kind=InjectionEvent.Kind.SUPERSEDED,
        )
        memory.refresh_from_db()
        successor.refresh_from_db()
        return Answer(
            f"[SUPERSEDED] #{memory.pk} -> #{successor.pk} (excluded from default recall)",
            {"superseded": memory_json(memory), "by": memory_json(successor)},
        )

    return await run_tool(ctx, body, access=Access.WRITE)


async def flymemory_state_lookup(ctx: Context, state_key: str) -> CallToolResult:
    """The current value of a state_key."""

    def body(call: Call) -> Answer:
        memory = selectors.state_current(workspace=call.workspace, key=state_key)
        now = timezone.now()
        since = rendering.age_label(memory.valid_from, now)
        return Answer(
            f"[{state_key}] CURRENT: {memory.text} (since {since}, #{memory.pk})",
            {
                "key": state_key,
                "value": memory.state_value or memory.text,
                "since": memory.valid_from,
                "memory": memory_json(memory, now=now),
            },
        )

    return await run_tool(ctx, body)


async def flymemory_state_history(ctx: Context, state_key: str) -> CallToolResult:
    """Every value a state_key has had, oldest first."""

    def body(call: Call) -> Answer:
        chain = selectors.state_history(workspace=call.workspace, key=state_key)
        now = timezone.now()
        lines = [f"STATE HISTORY: {state_key} ({len(chain)} entries)"]
        for memory in chain:
            tag = (
                "CURRENT"
                if memory.valid_to is None
                else f"superseded by #{memory.superseded_by_id}"
            )
            lines.append(
                f"  [#{memory.pk} | {rendering.age_label(memory.valid_from, now)} | {tag}] "
                f"{rendering.one_line(memory.text, 90)}"
            )
        return Answer(
            "\n".join(lines),
            {"key": state_key, "history": [memory_json(m, now=now) for m in chain]},
        )

    return await run_tool(ctx, body)


async def flymemory_consolidate(
    ctx: Context,
    memory_ids: list[int],
    conclusion: str,
    compartment: str = "",
    session_id: str = "",
) -> CallToolResult:
    """Merge 2+ related memories into one conclusion that links to them as
    evidence; the originals are kept.
    """

    def body(call: Call) -> Answer:
        data: dict[str, Any] = validated(
            ConsolidateApi.InputSerializer,
            {
                "ids": memory_ids,
                "conclusion": conclusion,
                "compartment": compartment,
                "app": call.app,
                "session": session_id,
            },
        ).validated_data
        session = call.session(data.get("session", ""))
        memory = services.memory_consolidate(
            workspace=call.workspace,
            ids=data["ids"],
            conclusion=data["conclusion"],
            compartment=data["compartment"],
            app=data["app"] or call.app_for(session),
            user=call.user,
            session=session,
            actor=_actor(call),
        )
        evidence = list(dict.fromkeys(data["ids"]))
        return Answer(
            f"[CONSOLIDATED -> #{memory.pk}] evidence: {evidence} | "
            f"{rendering.one_line(memory.text, 80)}",
            memory_json(memory),
        )

    return await run_tool(ctx, body, access=Access.WRITE)


def _actor(call: Call) -> Actor:
    return Actor(origin=Origin.MCP, user=call.user, key=call.caller.key)


def _conflict_line(conflict: selectors.Conflict, width: int) -> str:
    return (
        f"  #{conflict.a.pk} <-> #{conflict.b.pk} (sim={conflict.cosine:.2f}): "
        f"{rendering.one_line(conflict.a.text, width)} <-> "
        f"{rendering.one_line(conflict.b.text, width)}"
    )


def _conflict_json(conflict: selectors.Conflict, now: datetime) -> dict[str, Any]:
    return {
        "a": memory_json(conflict.a, now=now),
        "b": memory_json(conflict.b, now=now),
        "cosine": round(conflict.cosine, 4),
    }


async def flymemory_find_conflicts(
    ctx: Context, min_sim: float = 0.92, limit: int = 20
) -> CallToolResult:
    """Pairs of current memories above min_sim that may contradict each other.
    You decide: supersede or consolidate.
    """

    def body(call: Call) -> Answer:
        params: dict[str, Any] = validated(
            ConflictsApi.Params, {"threshold": min_sim}
        ).validated_data
        if not 1 <= limit <= 200:
            raise Invalid("limit is between 1 and 200.", code="invalid")
        conflicts = selectors.memory_conflicts(
            workspace=call.workspace,
            threshold=params["threshold"],
            limit=limit,
            viewer_id=call.user.pk,
        )
        now = timezone.now()
        if conflicts:
            text = "\n".join(
                [
                    f"CONFLICT CANDIDATES: {len(conflicts)} (you decide: supersede or merge)",
                    *(_conflict_line(c, 70) for c in conflicts),
                ]
            )
        else:
            text = "No contradiction candidates found."
        return Answer(text, {"conflicts": [_conflict_json(c, now) for c in conflicts]})

    return await run_tool(ctx, body)


async def flymemory_insights(
    ctx: Context, decay_threshold: float = 0.5, limit: int = 10
) -> CallToolResult:
    """Contradiction candidates, and valuable memories fading below
    decay_threshold.
    """

    def body(call: Call) -> Answer:
        if not 0 <= decay_threshold <= 1:
            raise Invalid("decay_threshold is between 0 and 1.", code="invalid")
        if not 1 <= limit <= 200:
            raise Invalid("limit is between 1 and 200.", code="invalid")
        now = timezone.now()
        conflicts = selectors.memory_conflicts(
            workspace=call.workspace, limit=limit, viewer_id=call.user.pk
        )
        fading = selectors.memory_fading(
            workspace=call.workspace,
            below=decay_threshold,
            limit=limit,
            now=now,
            viewer_id=call.user.pk,
        )
        lines = [f"CONTRADICTION CANDIDATES: {len(conflicts)}"]
        lines += [_conflict_line(c, 60) for c in conflicts]
        lines.append(f"HIGH-VALUE ENTRIES FADING (retention < {decay_threshold}): {len(fading)}")
        lines += [
            f"  [#{m.pk} | retention={r:.0%}] {rendering.one_line(m.text, 70)}" for m, r in fading
        ]
        return Answer(
            "\n".join(lines),
            {
                "conflicts": [_conflict_json(c, now) for c in conflicts],
                "fading": [
                    memory_json(m, now=now, extra={"retention": round(r, 4)}) for m, r in fading
                ],
            },
        )

    return await run_tool(ctx, body)


async def flymemory_forget(ctx: Context, memory_id: int) -> CallToolResult:
    """Forget a WRONG memory (an outdated one: supersede it). A person can
    restore it from the dashboard for a while."""

    def body(call: Call) -> Answer:
        memory = selectors.memory_get(
            workspace=call.workspace, memory_id=memory_id, viewer_id=call.user.pk
        )
        text = memory.text
        services.memory_forget(workspace=call.workspace, memory=memory, actor=_actor(call))
        return Answer(
            f"[FORGOT #{memory_id}] {rendering.one_line(text, 80)}", {"forgotten": memory_id}
        )

    return await run_tool(ctx, body, access=Access.WRITE)


async def flymemory_cleanup(
    ctx: Context,
    min_retention: float = 0.1,
    protect_model_stored: bool = True,
    dry_run: bool = False,
) -> CallToolResult:
    """Remove memories decayed below the workspace's thresholds; dry_run only
    lists them. min_retention, protect_model_stored: accepted, not used.
    """

    def body(call: Call) -> Answer:
        data: dict[str, Any] = validated(
            CleanupApi.InputSerializer, {"dry_run": dry_run}
        ).validated_data
        report = services.memory_cleanup(
            workspace=call.workspace, dry_run=data["dry_run"], member_id=call.user.pk
        )
        plain = knob(call.workspace, "cleanup_threshold")
        valuable = knob(call.workspace, "cleanup_threshold_valuable")
        kept = "/".join(VALUABLE_SOURCES)
        remaining = Memory.objects.filter(
            selectors.visible_to(call.user.pk), workspace=call.workspace, forgotten_at__isnull=True
        ).count()
        if report.dry_run:
            head = f"Would remove {len(report.candidates)} decayed memories."
        else:
            head = f"Removed {report.removed} decayed memories. Remaining: {remaining}"
        return Answer(
            f"{head} (thresholds: retention < {plain:.3g}, {kept} < {valuable:.3g})",
            {
                "dry_run": report.dry_run,
                "removed": report.removed,
                "remaining": remaining,
                "candidates": [
                    {"id": i, "retention": round(r, 4), "source": s}
                    for i, r, s in report.candidates
                ],
            },
        )

    return await run_tool(ctx, body, access=Access.WRITE)


async def flymemory_session_pack(ctx: Context, minutes: float = 180) -> CallToolResult:
    """After a compaction: the trail of the last `minutes` and the newest
    conclusions.
    """

    def body(call: Call) -> Answer:
        values: dict[str, Any] = validated(
            SessionPackApi.Params, {"minutes": round(minutes)}
        ).validated_data
        now = timezone.now()
        pack = selectors.session_pack(
            workspace=call.workspace, minutes=values["minutes"], now=now, viewer_id=call.user.pk
        )

        def entry(m: Memory) -> dict[str, Any]:
            return {
                "id": m.pk,
                "text": selectors.cut_at_sentence(m.text, values["chars"]),
                "age": _age(m, now),
                "source": m.source,
                "app": m.app,
            }

        def lines(memories: list[Memory]) -> list[str]:
            return [
                f"  [#{m.pk} | {_age(m, now)} | {_source(m)}] "
                f"{selectors.cut_at_sentence(m.text, values['chars'])}"
                for m in memories
            ]

        if not pack.trail and not pack.conclusions:
            text = "Nothing to recover: no entries in the requested window."
        else:
            parts = []
            if pack.trail:
                parts += [f"RECENT TRAIL (last {values['minutes']} min):", *lines(pack.trail)]
            if pack.conclusions:
                parts += ["LATEST CONCLUSIONS:", *lines(pack.conclusions)]
            text = "\n".join(parts)
        return Answer(
            text,
            {
                "trail": [entry(m) for m in pack.trail],
                "conclusions": [entry(m) for m in pack.conclusions],
            },
        )

    return await run_tool(ctx, body)


async def flymemory_stats(ctx: Context) -> CallToolResult:
    """Library statistics."""

    def body(call: Call) -> Answer:
        stats = selectors.memory_stats(workspace=call.workspace, viewer_id=call.user.pk)
        if not stats["current"] and not stats["superseded"]:
            return Answer("Memory empty.", stats)

        def listed(counts: dict[str, int]) -> str:
            return ", ".join(f"{name or '-'}={n}" for name, n in counts.items()) or "-"

        text = (
            f"Memories: {stats['current']} current, {stats['superseded']} superseded, "
            f"Oldest: {stats['oldest_age_days']}d, Newest: {stats['newest_age_days']}d, "
            f"Avg access count: {stats['access_count_mean']:.1f}, "
            f"Never accessed: {stats['never_accessed']}, State keys: {stats['state_keys']}\n"
            f"Apps: {listed(stats['by_app'])}\n"
            f"Sources: {listed(stats['by_source'])}\n"
            f"Compartments: {listed(stats['by_compartment'])}"
        )
        return Answer(text, stats)

    return await run_tool(ctx, body)


TOOLS = (
    flymemory_remember,
    flymemory_recall,
    flymemory_auto,
    flymemory_recall_index,
    flymemory_recall_block,
    flymemory_get_memory,
    flymemory_supersede,
    flymemory_state_lookup,
    flymemory_state_history,
    flymemory_consolidate,
    flymemory_find_conflicts,
    flymemory_insights,
    flymemory_forget,
    flymemory_cleanup,
    flymemory_session_pack,
    flymemory_stats,
)
