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
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import CallToolResult

from contexts.errors import Invalid
from contexts.flowctx import selectors, services
from contexts.flowctx.api import ScratchpadApi, SummaryOutput, scratchpad_json
from contexts.selectors import Access
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
    """Retrieve the full original behind a flowctx marker.

    Pass `hash` (from a compression marker; 64 hex digits, or a unique prefix of
    at least 12) for the verbatim text that was projected away, or `node` (e.g.
    "d0-1-12", from a handoff note) with the session for that note in full.

    Args:
        hash: the SHA-256 (or a prefix) named by a compression marker
        node: a summary node id
        session_id: the session the node belongs to (defaults to the connection's ?session=)
    """

    def body(call: Call) -> Answer:
        if bool(hash.strip()) == bool(node.strip()):
            raise Invalid("Pass either `hash` or `node`.", code="retrieve_target")
        if hash.strip():
            ref = selectors.compression_get(workspace=call.workspace, sha256=hash)
            content = bytes(ref.content)
            text = content.decode("utf-8", errors="replace")
            return Answer(
                text,
                {
                    "sha256": ref.sha256,
                    "size": ref.size,
                    "content_type": ref.content_type,
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
    external_id = _session_required(call, session_id)
    values: dict[str, Any] = validated(
        ScratchpadApi.InputSerializer, {"op": op, "text": text, "old_text": old_text}
    ).validated_data
    with transaction.atomic():
        session = call.session(external_id)
        assert session is not None  # an external id was required above
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
    """Append a line to your working-memory scratchpad (the <working_memory> block):
    current goals, open sub-tasks, a key result you must not forget this session.

    Args:
        text: the text to append
        session_id: your session (defaults to the connection's ?session=)
    """

    def body(call: Call) -> Answer:
        return _scratchpad_edit(call, session_id=session_id, op="append", text=text)

    return await run_tool(ctx, body, access=Access.WRITE)


async def flowctx_scratch_replace(
    ctx: Context, old_text: str, new_text: str, session_id: str = ""
) -> CallToolResult:
    """Replace the first occurrence of old_text with new_text in your scratchpad.

    Args:
        old_text: the text to replace
        new_text: what replaces it
        session_id: your session (defaults to the connection's ?session=)
    """

    def body(call: Call) -> Answer:
        return _scratchpad_edit(
            call, session_id=session_id, op="replace", text=new_text, old_text=old_text
        )

    return await run_tool(ctx, body, access=Access.WRITE)


async def flowctx_scratch_rethink(
    ctx: Context, content: str, session_id: str = ""
) -> CallToolResult:
    """Rewrite the whole scratchpad with a cleaner, more concise version.

    Args:
        content: the new full scratchpad
        session_id: your session (defaults to the connection's ?session=)
    """

    def body(call: Call) -> Answer:
        return _scratchpad_edit(call, session_id=session_id, op="rethink", text=content)

    return await run_tool(ctx, body, access=Access.WRITE)


TOOLS = (
    flowctx_retrieve,
    flowctx_scratch_append,
    flowctx_scratch_replace,
    flowctx_scratch_rethink,
)


def register(server: FastMCP) -> None:
    for tool in TOOLS:
        server.add_tool(tool)
