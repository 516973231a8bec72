"""The ASGI front door: `/mcp` to the MCP server, everything else to Django.

- `lifespan`: the SDK's session manager runs for the life of the process
  (its task group serves every MCP request); Django has no lifespan of its
  own, so the dispatcher answers the protocol itself.
- `/mcp` and `/mcp/…`: Host checked against `ALLOWED_HOSTS`, then the
  bearer key, the workspace and the tool profile (`?tools=`) resolved
  (`caller.caller_resolve`) in Django's sync thread. Failures answer like the REST API does, JSON
  `{"code", "detail"}` with 401 / 404 / 400 (429 with Retry-After past the
  limit of wrong keys), before the SDK sees anything.
  The resolved caller rides in the ASGI scope to the tools.
- anything else: Django, untouched.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.fastmcp import FastMCP
from starlette.datastructures import Headers, QueryParams
from starlette.types import Receive, Scope, Send

from contexts.errors import MemflowError
from memflow_site.asgi_parts import replay, send_json
from memflow_site.mcp.caller import SCOPE_KEY, Caller, caller_resolve
from memflow_site.mcp.profiles import PROFILES
from memflow_site.mcp.server import build_server

MCP_PATH = "/mcp"


def is_mcp_path(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


def host_allowed(host: str) -> bool:
    """Django's own Host check (`HttpRequest.get_host`), for requests Django never sees."""
    domain, _ = split_domain_port(host)
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def _resolve(authorization: str, params: Mapping[str, str], address: str) -> Caller:
    close_old_connections()
    try:
        return caller_resolve(authorization=authorization, params=params, address=address)
    finally:
        close_old_connections()


class McpEndpoint:
    """An ASGI app: the MCP endpoint in front of `django_app`."""

    def __init__(
        self,
        django_app: Callable[..., Awaitable[None]],
        servers: Mapping[str, FastMCP] | None = None,
    ) -> None:
        self.django_app = django_app
        # One server per tool profile (`?tools=`), each with the tools it lists.
        self.servers = dict(servers or {name: build_server(name) for name in PROFILES})
        for server in self.servers.values():
            server.streamable_http_app()  # creates the session manager
        self.managers = {name: server.session_manager for name, server in self.servers.items()}
        self.running = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif scope["type"] == "http" and is_mcp_path(scope["path"]):
            await self.mcp(scope, receive, send)
        else:
            await self.django_app(scope, receive, send)

    async def lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        started = False
        try:
            async with AsyncExitStack() as managers:
                for manager in self.managers.values():
                    await managers.enter_async_context(manager.run())
                self.running = started = True
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
                self.running = False
        except Exception as exc:
            self.running = False
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": repr(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    async def mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.running:
            await send_json(
                send,
                503,
                {
                    "code": "mcp_unavailable",
                    "detail": "The MCP endpoint starts with the ASGI lifespan, which this "
                    "server did not run.",
                },
            )
            return
        headers = Headers(scope=scope)
        if not host_allowed(headers.get("host", "")):
            await send_json(
                send, 400, {"code": "disallowed_host", "detail": "Invalid Host header."}
            )
            return
        params = QueryParams(scope.get("query_string", b""))
        client = scope.get("client") or ("", 0)
        try:
            caller = await sync_to_async(_resolve, thread_sensitive=True)(
                headers.get("authorization", ""), dict(params), str(client[0])
            )
        except MemflowError as exc:
            # As DRF does for the REST API: a 401 names the scheme to use; a
            # 429 says when to come back.
            extra = dict(getattr(exc, "headers", None) or {})
            if exc.status_code == 401:
                extra["WWW-Authenticate"] = "Bearer"
            await send_json(send, exc.status_code, exc.as_json(), extra)
            return
        scope[SCOPE_KEY] = caller
        if scope.get("method") == "POST":
            body, refusal = await _read_checked_body(receive)
            if refusal is not None:
                await send_json(send, 400, refusal)
                return
            receive = replay(body, receive)
        await self.managers[caller.tools].handle_request(scope, receive, send)


async def _read_checked_body(receive: Receive) -> tuple[bytes, dict[str, str] | None]:
    """The whole body, or why it is refused: what the SDK would answer with a 500."""
    chunks: list[bytes] = []
    size = 0
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 10 * 2**20
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", {
                "code": "request_too_large",
                "detail": f"The body is over {limit:,} bytes.",
            }
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, {"code": "invalid_utf8", "detail": "The body is not valid UTF-8."}
    try:
        json.loads(text)
    except RecursionError:
        return body, {"code": "json_too_deep", "detail": "The JSON is nested too deeply."}
    except ValueError:
        pass  # not JSON: the SDK answers that itself, as a JSON-RPC parse error
    return body, None
