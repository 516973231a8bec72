"""Core memory tools: HME's `memory` (add / replace / remove) and `archive_move`.

`target` is "user" (the caller's USER document, shared by all their
workspaces) or "memory" (this workspace's MEMORY document), as in the HME
design and the REST endpoints under `core/<target>/` (memories/api/core.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from django.contrib.auth.models import User
from mcp.server.fastmcp import Context
from mcp.types import CallToolResult
from pydantic import Field

from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.selectors import Access
from memflow_site.mcp.runner import Answer, Call, run_tool, validated
from memories import core
from memories.api.core import CoreEditApi, CoreMoveApi, view_json
from memories.api.memories import memory_json
from memories.models import CoreMemory


def _one_of(*values: str) -> Any:
    # The schema names the choices; the service still checks them, so a bad
    # value answers with its error code (unknown_target, invalid), not a
    # bare argument-validation message.
    return Field(json_schema_extra={"enum": list(values)})


def _owner(call: Call, scope: str) -> User | None:
    """USER documents belong to the caller; MEMORY to the workspace (as core_api._owner)."""
    return call.user if scope == CoreMemory.Scope.USER else None


async def memory(
    ctx: Context,
    action: Annotated[str, _one_of("add", "replace", "remove")],
    target: Annotated[str, _one_of(CoreMemory.Scope.USER, CoreMemory.Scope.WORKSPACE)],
    content: str = "",
    old_text: str = "",
    session_id: str = "",
) -> CallToolResult:
    """Edit a line of a bounded core document: target "user" (who the user is,
    every workspace) or "memory" (this project). add `content`; replace or
    remove the line containing old_text. A full document refuses an add and
    names lines to remove or archive_move.
    """

    def body(call: Call) -> Answer:
        scope = core.scope_for(target)
        data: dict[str, Any] = validated(
            CoreEditApi.InputSerializer,
            {"action": action, "content": content, "old_text": old_text, "session": session_id},
        ).validated_data
        edit = core.core_edit(
            scope=scope,
            action=data["action"],
            workspace=call.workspace,
            user=_owner(call, scope),
            content=data["content"],
            old_text=data["old_text"],
            session=call.session(data.get("session", "")),
            actor=Actor(origin=Origin.MCP, user=call.user, key=call.caller.key),
        )
        return Answer(
            f"{edit.outcome}\n{edit.view.rendered}",
            {
                "outcome": edit.outcome,
                "document": view_json(edit.view),
                "version": edit.view.version,
            },
        )

    return await run_tool(ctx, body, access=Access.WRITE)


async def archive_move(
    ctx: Context,
    old_text: str,
    category: Annotated[str, _one_of(*core.ARCHIVE_CATEGORIES)],
    target: Annotated[
        str, _one_of(CoreMemory.Scope.USER, CoreMemory.Scope.WORKSPACE)
    ] = CoreMemory.Scope.WORKSPACE,
    session_id: str = "",
) -> CallToolResult:
    """Move the core line containing old_text into long-term memory, in the
    compartment `category`, to make room.
    """

    def body(call: Call) -> Answer:
        scope = core.scope_for(target)
        data: dict[str, Any] = validated(
            CoreMoveApi.InputSerializer,
            {"old_text": old_text, "category": category, "session": session_id},
        ).validated_data
        owner = _owner(call, scope)
        moved = core.core_move_to_archive(
            scope=scope,
            workspace=call.workspace,
            user=owner,
            old_text=data["old_text"],
            category=data["category"],
            session=call.session(data.get("session", "")),
            actor=Actor(origin=Origin.MCP, user=call.user, key=call.caller.key),
        )
        view = core.core_view(scope=scope, user=owner, workspace=call.workspace)
        return Answer(
            f"[ARCHIVED #{moved.pk} as {moved.compartment}] {moved.text}\n{view.rendered}",
            {"memory": memory_json(moved), "document": view_json(view)},
        )

    return await run_tool(ctx, body, access=Access.WRITE)


TOOLS = (memory, archive_move)
