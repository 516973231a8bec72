"""memflow's MCP endpoint (streamable HTTP at `/mcp/`), built on the official SDK.

`endpoint.McpEndpoint` is the ASGI front door (auth, workspace, lifespan);
`server.build_server` makes the FastMCP server and registers the tool
modules: `flymemory` (FlyMemory's sixteen tools), `core` (HME's `memory`,
`archive_move`) and `flowctx` (retrieve, scratchpad).
"""

from __future__ import annotations

from memflow_site.mcp.endpoint import McpEndpoint
from memflow_site.mcp.server import TOOL_MODULES, build_server

__all__ = ["TOOL_MODULES", "McpEndpoint", "build_server"]
