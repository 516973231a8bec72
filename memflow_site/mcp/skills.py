"""Skill tools: the catalogue and one skill's body, as the REST endpoints give them.

`skill_list` is what a skill catalogue shows (name + description: the
harness loads bodies on demand); `skill_get` returns the whole skill and,
with a session, records the use — the same calls as skills/api.py.
"""

from __future__ import annotations

from mcp.server.fastmcp import Context
from mcp.types import CallToolResult

from memflow_site.mcp.runner import Answer, Call, run_tool
from skills import selectors, services
from skills.api import skill_json


async def skill_list(ctx: Context, status: str = "available") -> CallToolResult:
    """Your skills, name and description each; status: available (default),
    active, stale, archived or all.
    """

    def body(call: Call) -> Answer:
        skills = list(selectors.skill_list(workspace=call.workspace, user=call.user, status=status))
        lines = [f"{s.name}: {s.description}" for s in skills]
        entries = [{"name": s.name, "description": s.description, "scope": s.scope} for s in skills]
        return Answer("\n".join(lines) or "(no skills yet)", {"skills": entries})

    return await run_tool(ctx, body)


async def skill_get(ctx: Context, name: str, session_id: str = "") -> CallToolResult:
    """Load one skill in full."""

    def body(call: Call) -> Answer:
        skill = selectors.skill_get(workspace=call.workspace, user=call.user, name=name.strip())
        session = call.session(session_id)
        if session is not None:
            services.skill_use_record(skill=skill, session=session, user=call.user)
            skill.refresh_from_db()
        return Answer(f"# {skill.name}\n{skill.description}\n\n{skill.body}", skill_json(skill))

    return await run_tool(ctx, body)


TOOLS = (skill_list, skill_get)
