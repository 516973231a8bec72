"""The MCP SDK's own client, driven from synchronous tests.

Each operation opens a session (initialize, then the request) in its own event
loop, so the test thread is free for the ORM in between.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

T = TypeVar("T")


def text_of(result: CallToolResult) -> str:
    return "\n".join(item.text for item in result.content if isinstance(item, TextContent))


@dataclass
class Mcp:
    url: str  # the endpoint, query included
    key: str | None

    def _run(self, operation: Callable[[ClientSession], Awaitable[T]]) -> T:
        async def go() -> T:
            headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
            timeout = httpx.Timeout(60, read=120)
            async with (
                httpx.AsyncClient(headers=headers, timeout=timeout) as http,
                streamable_http_client(self.url, http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await operation(session)

        return anyio.run(go)

    def tool_names(self) -> list[str]:
        async def names(session: ClientSession) -> list[str]:
            return [tool.name for tool in (await session.list_tools()).tools]

        return self._run(names)

    def call(self, tool: str, /, **arguments: Any) -> CallToolResult:
        async def call(session: ClientSession) -> CallToolResult:
            return await session.call_tool(tool, arguments)

        return self._run(call)

    def ok(self, tool: str, /, **arguments: Any) -> tuple[str, dict[str, Any]]:
        """The text and structured content of a call that must succeed."""
        result = self.call(tool, **arguments)
        assert not result.isError, f"{tool} failed: {text_of(result)}"
        return text_of(result), result.structuredContent or {}

    def error(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """The `{"code", "detail"}` of a call that must fail."""
        result = self.call(tool, **arguments)
        assert result.isError, f"{tool} should have failed: {text_of(result)}"
        assert result.structuredContent is not None
        return result.structuredContent
