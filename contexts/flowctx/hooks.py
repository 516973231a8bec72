"""What flowctx adds to the hook pipeline.

- post-tool-use: a tool result over the workspace's threshold is stored as a
  compression ref and projected; the answer carries the projection for
  harnesses that can replace a tool result, and a short note naming the ref
  for those that cannot.
- user-prompt: the scratchpad as `<working_memory …>`, when enabled.
- stop / pre-compact: queue a summary fold when one is due (a compaction
  forces the remaining history into a leaf).
- session-end: queue the capture of what the session did (`work`).
- pre-compact, and a session restarting after compaction: the active
  handoff notes, one placeholder per node.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import html
import json
import logging
from typing import Any

from django.db.models import Max, Sum

from contexts.flowctx import selectors, services, tasks, work
from contexts.hooks import Block, HookContext, inert, register_observer, register_provider
from contexts.models import CompressionRef, SessionEvent, SummaryNode
from contexts.tenancy.knobs import knob
from contexts.tenancy.quotas import QuotaExceeded
from memflow_site.runtime.tokens import estimate_tokens

logger = logging.getLogger(__name__)

_RESULT_KEYS = ("tool_response", "tool_result", "result", "output")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "code")


def _exit_code(*sources: Any) -> int | None:
    for source in sources:
        if not isinstance(source, dict):
            continue
        for key in _EXIT_KEYS:
            value = source.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        for key in ("is_error", "isError"):
            if source.get(key) is True:
                return 1
    return None


def tool_result_of(payload: dict[str, Any]) -> tuple[str, int | None]:
    """The full text of a hook's tool result, and its exit code when the harness says.

    Claude Code's Bash answers {"stdout", "stderr", …}, Read {"file": {"content"}},
    MCP tools a list of content parts; dsh and others a string or a dict.
    """
    result = next((payload[k] for k in _RESULT_KEYS if payload.get(k) not in (None, "")), None)
    exit_code = _exit_code(result, payload)
    if isinstance(result, str):
        return result, exit_code
    if isinstance(result, list):
        parts = [p.get("text") for p in result if isinstance(p, dict)]
        if parts and all(isinstance(p, str) for p in parts):
            return "\n".join(p for p in parts if isinstance(p, str)), exit_code
    if isinstance(result, dict):
        if "stdout" in result or "stderr" in result:
            streams = [result.get("stdout"), result.get("stderr")]
            return "\n".join(s for s in streams if isinstance(s, str) and s), exit_code
        file = result.get("file")
        if isinstance(file, dict) and isinstance(file.get("content"), str):
            return file["content"], exit_code
        for key in ("content", "output", "text"):
            if isinstance(result.get(key), str):
                return result[key], exit_code
    if result is None:
        return "", exit_code
    return json.dumps(result, ensure_ascii=False, indent=1, default=str), exit_code


# --- post-tool-use: reversible projection ----------------------------------------------------


def whole_output(payload: dict[str, Any]) -> tuple[bytes | None, int | None, str]:
    """(the whole tool output the hook client sent, the whole's size, why it is not here).

    Claude Code cuts a tool's `stdout` at 30,000 characters and names the
    file holding all of it in `tool_response.persistedOutputPath`. The client
    on the agent's machine reads that file and sends it as `memflow_output`
    ({"text"} or {"base64"}, with "size" and "sha256"), or the reason it could
    not ({"refused", "size"}). The server never reads a path a request names.
    """
    output = payload.get("memflow_output")
    response = payload.get("tool_response")
    if not isinstance(output, dict):
        if not isinstance(response, dict) or "persistedOutputPath" not in response:
            return None, None, ""
        size = response.get("persistedOutputSize")
        return None, size if isinstance(size, int) else None, "the hook sent only the preview"
    size = output.get("size") if isinstance(output.get("size"), int) else None
    refused = output.get("refused")
    if isinstance(refused, str) and refused.strip():
        return None, size, inert(refused.strip()[:500])
    data: bytes | None = None
    if isinstance(output.get("text"), str):
        data = output["text"].encode("utf-8", errors="surrogatepass")
    elif isinstance(output.get("base64"), str):
        with contextlib.suppress(binascii.Error, ValueError):
            data = base64.b64decode(output["base64"], validate=True)
    if data is None:
        return None, size, "the hook sent no readable output"
    sha = output.get("sha256")
    if (size is not None and size != len(data)) or (
        isinstance(sha, str) and sha != hashlib.sha256(data).hexdigest()
    ):
        return None, size, "the output the hook sent does not match its size and sha256"
    return data, len(data), ""


def projection_block(ctx: HookContext) -> Block | None:
    workspace = ctx.workspace
    if not knob(workspace, "projection"):
        return None
    text, exit_code = tool_result_of(ctx.payload)
    whole, whole_size, why_not = whole_output(ctx.payload)
    content = text.encode("utf-8", errors="surrogatepass")
    if whole is not None:
        # The file holds stdout as the shell wrote it; stderr, if any, follows
        # as tool_result_of joins them.
        response = ctx.payload.get("tool_response")
        stderr = response.get("stderr") if isinstance(response, dict) else None
        content = whole + (b"\n" + stderr.encode("utf-8", "surrogatepass") if stderr else b"")
        text = content.decode("utf-8", errors="replace")
    threshold = int(knob(workspace, "projection_threshold_tokens"))
    if not text or estimate_tokens(text) <= threshold:
        return None
    tool_name = inert(str(ctx.payload.get("tool_name") or ctx.payload.get("tool") or "")[:200])
    cut = why_not and whole_size is not None and whole_size > len(content)
    try:
        compressed = services.compression_store(
            workspace=workspace,
            content=content,
            tool_name=tool_name,
            exit_code=exit_code,
            session=ctx.session,
            budget_tokens=threshold,
            truncated_from_size=whole_size if cut else None,
        )
    except QuotaExceeded:
        return None  # past the byte quota the result reaches the model as it was
    ref = compressed.ref
    if compressed.projection is not None:
        ctx.tool_result = {
            "sha256": ref.sha256,
            "kind": compressed.projection.kind,
            "text": compressed.text,
            "original_chars": compressed.projection.original_chars,
            "projected_chars": len(compressed.text),
        }
    # Only what this session's model can call: memflow's MCP tool, else the memflow command.
    get_back = ctx.callable.retrieve(ref.sha256)
    tool = tool_name or "tool"
    if why_not:
        # Say exactly what is kept: a model told "byte for byte" would trust it.
        total = f"{whole_size:,} bytes in all" if whole_size is not None else "its size unknown"
        note = (
            f'<memflow-compression ref="{ref.sha256}" truncated="true">Only part of the {tool} '
            f"output above is stored: the {ref.size:,} bytes the hook was shown, of the whole "
            f"output ({total}), because {why_not}. That part comes back with {get_back}; run "
            "the tool again for the rest.</memflow-compression>"
        )
    else:
        # "whole" only when the client read it whole; Claude Code trims the
        # outputs it does not cut (leading blank lines, trailing newlines).
        response = ctx.payload.get("tool_response")
        shown = "hook_event_name" in ctx.payload and isinstance(response, dict)
        size = (
            f"{ref.size:,} bytes) is stored whole"
            if whole is not None
            else f"{ref.size:,} bytes, as Claude Code showed it) is stored"
            if shown
            else f"{ref.size:,} bytes) is stored"
        )
        note = (
            f'<memflow-compression ref="{ref.sha256}">The {tool} output above ({size}; when it '
            f"has left the context, get it back byte for byte with {get_back}, not by "
            "running the tool again.</memflow-compression>"
        )
    if ref.masked:
        note = masked_note(ref=ref, tool=tool, get_back=get_back, why_partial=why_not)
    return Block(name="flowctx:compression", order=300, text=note)


def masked_note(*, ref: CompressionRef, tool: str, get_back: str, why_partial: str) -> str:
    """What the model is told of an output kept with its credentials cut out:
    what comes back is not what the tool printed, and what is missing."""
    partial = (
        f' truncated="true">Only part of the {tool} output above is stored, because '
        f"{why_partial}, and it held credentials: "
        if why_partial
        else f">The {tool} output above held credentials: "
    )
    return (
        f'<memflow-compression ref="{ref.sha256}" masked="true"{partial}it is stored '
        f"({ref.size:,} bytes) with each cut out as `[redacted: kind]` "
        f"({'; '.join(ref.masked or [])}), so what {get_back} gives back is not byte for byte. "
        "Run the tool again if the exact text is needed.</memflow-compression>"
    )


# --- user-prompt: the scratchpad ----------------------------------------------------------------


def scratchpad_block(ctx: HookContext) -> Block | None:
    if ctx.muted or not knob(ctx.workspace, "scratchpad"):
        return None
    ctx.session.workspace = ctx.workspace
    return Block(
        name="flowctx:scratchpad",
        order=230,
        text=selectors.scratchpad_render(session=ctx.session),
    )


# --- stop / pre-compact: folds ------------------------------------------------------------------


def fold_due(ctx: HookContext) -> bool:
    """Whether unfolded history (before the kept turns) reaches a leaf's size."""
    session = ctx.session
    keep = int(knob(ctx.workspace, "summary_keep_turns"))
    covered = SummaryNode.objects.filter(session=session).aggregate(end=Max("end_turn"))["end"] or 0
    unfolded = (
        SessionEvent.objects.filter(
            session=session, turn__gt=covered, turn__lte=max(session.turns - keep, 0)
        )
        .exclude(kind__in=services.NOT_HISTORY)
        .aggregate(total=Sum("tokens"))["total"]
        or 0
    )
    return unfolded >= int(knob(ctx.workspace, "summary_leaf_tokens"))


def fold_observer(ctx: HookContext) -> None:
    if not knob(ctx.workspace, "summaries") or ctx.delegation_depth > 0:
        return
    force = ctx.event == "pre-compact"
    if force or fold_due(ctx):
        ctx.session.workspace = ctx.workspace
        generation = tasks.summaries_enqueue(session=ctx.session, force=force)
        ctx.notes.append(f"summary fold queued (generation {generation})")


def work_observer(ctx: HookContext) -> None:
    """A session ended: what it did is handed on in the worker (see `work`)."""
    if ctx.delegation_depth > 0 or not work.work_wanted(ctx.workspace):
        return
    ctx.session.workspace = ctx.workspace
    tasks.session_work_enqueue(session=ctx.session)
    ctx.notes.append("session work capture queued")


# --- pre-compact and restarts: the handoff notes -----------------------------------------------


def handoff_blocks(ctx: HookContext) -> list[Block]:
    if ctx.event == "session-start" and ctx.payload.get("source") not in ("compact", "resume"):
        return []
    if not knob(ctx.workspace, "summaries"):
        return []
    nodes = selectors.summaries_active(session=ctx.session)
    return [
        Block(
            # Zero-padded, so the (order, name) sort keeps turn order.
            name=f"flowctx:handoff:{n.start_turn:06d}",
            order=80,
            text=(
                f'<flowctx-handoff-note node="{n.node_id}" turns="{n.start_turn}-{n.end_turn}" '
                f'retrieve="{_attribute(ctx.callable.retrieve_node(n.node_id))}">\n'
                f"{inert(n.text)}\n</flowctx-handoff-note>"
            ),
        )
        for n in nodes
    ]


def _attribute(text: str) -> str:
    return html.escape(text, quote=False).replace('"', "&quot;")


def register() -> None:
    register_provider("flowctx:projection", events=["post-tool-use"], fn=projection_block)
    register_provider("flowctx:scratchpad", events=["user-prompt"], fn=scratchpad_block)
    register_provider("flowctx:handoff", events=["pre-compact", "session-start"], fn=handoff_blocks)
    register_observer("flowctx:fold", events=["stop", "pre-compact"], fn=fold_observer)
    register_observer("flowctx:work", events=["session-end"], fn=work_observer)
