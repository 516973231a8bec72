"""memflow's MCP endpoint (streamable HTTP at `/mcp/`), built on the official SDK.

`endpoint.McpEndpoint` is the ASGI front door (auth, workspace, tool profile,
lifespan); `server.build_server` makes the FastMCP server of one profile from
the tool modules: `flymemory` (FlyMemory's sixteen tools), `core` (HME's
`memory`, `archive_move`), `flowctx` (retrieve, scratchpad) and `skills`.
"""

from __future__ import annotations

from memflow_site.mcp.endpoint import McpEndpoint
from memflow_site.mcp.profiles import PROFILES
from memflow_site.mcp.server import TOOLS, build_server

__all__ = ["PROFILES", "TOOLS", "McpEndpoint", "build_server"]
