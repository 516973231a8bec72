"""flowctx tools, with flowctx-dsh's names and arguments (seed 003).

`flowctx_retrieve` brings back what a projection marker or a handoff note
stands for: an original by its `hash`, or a summary node by its `node` id.
The scratchpad tools edit the session's `<working_memory>`. All of them
call what the REST endpoints under `compression/` and `sessions/{id}/`
call (contexts/flowctx/api.py).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from mcp.server.fastmcp import Context
from mcp.types import CallToolResult

from contexts.errors import Conflict, Invalid, NotFound
from contexts.flowctx import selectors, services
from contexts.flowctx.api import ScratchpadApi, SummaryOutput, scratchpad_json
from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from contexts.tenancy.selectors import Access
from memflow_site.mcp.runner import Answer, Call, run_tool, validated


def _session_required(call: Call, session_id: str) -> str:
    external_id = call.session_external_id(session_id)
    if not external_id:
        raise Invalid(
            "This belongs to a session: pass session_id, or connect with ?session=<id>.",
            code="session_required",
        )
    return external_id


async def flowctx_retrieve(
    ctx: Context, hash: str = "", node: str = "", session_id: str = ""
) -> CallToolResult:
    """The original behind a marker: `hash` (a compression marker's, or 12+ hex of
    it) gives the output as stored (verbatim unless credentials were masked in it); `node` (a handoff note's id) that note.
    """

    def body(call: Call) -> Answer:
        if bool(hash.strip()) == bool(node.strip()):
            raise Invalid("Pass either `hash` or `node`.", code="retrieve_target")
        if hash.strip():
            ref = selectors.compression_get(workspace=call.workspace, sha256=hash)
            ref = services.compression_masked_legacy(ref=ref)
            content = bytes(ref.content)
            text = content.decode("utf-8", errors="replace")
            masked = list(ref.masked or [])
            shown = text
            if masked:  # the model must not take it for what the tool printed
                shown = (
                    f"[memflow: stored with credentials masked ({'; '.join(masked)}); "
                    f"not byte for byte]\n{text}"
                )
            return Answer(
                shown,
                {
                    "sha256": ref.sha256,
                    "size": ref.size,
                    "content_type": ref.content_type,
                    "masked": masked,
                    "byte_exact": not masked,
                    "text": text,
                },
            )
        session = selectors.session_for(
            workspace=call.workspace, session_id=_session_required(call, session_id)
        )
        found = selectors.summary_get(session=session, node_id=node.strip())
        return Answer(found.text, dict(SummaryOutput(found).data))

    return await run_tool(ctx, body)


def _scratchpad_edit(
    call: Call, *, session_id: str, op: str, text: str, old_text: str = ""
) -> Answer:
    """ScratchpadApi.post for a tool call."""
    if not knob(call.workspace, "scratchpad"):
        raise Conflict(
            "The scratchpad is off in this workspace; an owner turns it on in its settings "
            "(knob `scratchpad`).",
            code="scratchpad_off",
        )
    external_id = _session_required(call, session_id)
    values: dict[str, Any] = validated(
        ScratchpadApi.InputSerializer, {"op": op, "text": text, "old_text": old_text}
    ).validated_data
    with transaction.atomic():
        session = call.session(external_id)
        if session is None:
            raise NotFound(
                f"No session {external_id[:80]!r} in this workspace: pass the session id "
                "given at session start.",
                code="session_not_found",
            )
        pad = services.scratchpad_edit(
            session=session,
            op=values["op"],
            text=values["text"],
            old_text=values.get("old_text", ""),
        )
    return Answer(
        selectors.scratchpad_render(session=session, pad=pad), scratchpad_json(pad, call.workspace)
    )


async def flowctx_scratch_append(ctx: Context, text: str, session_id: str = "") -> CallToolResult:
    """Append a line to your session's scratchpad (<working_memory>)."""

    def body(call: Call) -> Answer:
        return _scratchpad_edit(call, session_id=session_id, op="append", text=text)

    return await run_tool(ctx, body, access=Access.WRITE)


async def flowctx_scratch_replace(
    ctx: Context, old_text: str, new_text: str, session_id: str = ""
) -> CallToolResult:
    """Replace old_text with new_text in your scratchpad."""

    def body(call: Call) -> Answer:
        return _scratchpad_edit(
            call, session_id=session_id, op="replace", text=new_text, old_text=old_text
        )

    return await run_tool(ctx, body, access=Access.WRITE)


async def flowctx_scratch_rethink(
    ctx: Context, content: str, session_id: str = ""
) -> CallToolResult:
    """Rewrite your whole scratchpad."""

    def body(call: Call) -> Answer:
        return _scratchpad_edit(call, session_id=session_id, op="rethink", text=content)

    return await run_tool(ctx, body, access=Access.WRITE)


TOOLS = (
    flowctx_retrieve,
    flowctx_scratch_append,
    flowctx_scratch_replace,
    flowctx_scratch_rethink,
)
SCRATCH_TOOLS = frozenset(
    tool.__name__
    for tool in (flowctx_scratch_append, flowctx_scratch_replace, flowctx_scratch_rethink)
)


def tools_hidden(*, workspace: Workspace) -> frozenset[str]:
    """Tools not listed for this workspace: a model is not offered what would be refused."""
    return frozenset() if knob(workspace, "scratchpad") else SCRATCH_TOOLS
