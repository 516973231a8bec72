"""Tool profiles: `?tools=<profile>` on the MCP URL picks which tools are listed.

Every listed tool's definition goes to the model with every request it
receives; `lean` is the five a coding session uses.
"""

from __future__ import annotations

# The names a profile publishes; None: every tool.
PROFILES: dict[str, frozenset[str] | None] = {
    "all": None,
    "lean": frozenset(
        {
            "flymemory_recall",
            "flymemory_get_memory",
            "flymemory_remember",
            "flymemory_supersede",
            "flowctx_retrieve",
        }
    ),
}
DEFAULT_PROFILE = "all"
