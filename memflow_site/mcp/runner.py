"""How a tool runs: in Django's sync thread, with REST's validation and errors.

A tool is an async function the SDK awaits; its body is a plain sync
function of a `Call` that calls services and selectors and returns an
`Answer`. `run_tool` moves the body into Django's thread-sensitive executor
(the ORM must not run on the event loop), checks the access the tool needs,
and turns whatever the body raises into an MCP tool error carrying the same
`{"code", "detail"}` the REST API answers with — never a crash.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import close_old_connections
from django.http import Http404
from mcp.server.fastmcp import Context
from mcp.types import CallToolResult, TextContent
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.utils.encoders import JSONEncoder

from contexts.errors import MemflowError, NotFound, api_exception_handler, busy_from_database
from contexts.models import AgentSession, Workspace
from contexts.tenancy.selectors import Access, agent_session_own
from contexts.tenancy.services import agent_session_get_or_create
from memflow_site.mcp.caller import SCOPE_KEY, Caller

logger = logging.getLogger(__name__)

S = TypeVar("S", bound=serializers.Serializer)


@dataclass
class Answer:
    """What a tool returns: text for the model, and the same facts as JSON."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Call:
    """One tool call: the caller, and the session it names (if any)."""

    caller: Caller
    notes: list[str] = field(default_factory=list)  # said after the answer's text

    @property
    def workspace(self) -> Workspace:
        return self.caller.workspace

    @property
    def user(self) -> User:
        return self.caller.user

    @property
    def app(self) -> str:
        return self.caller.app

    def session_external_id(self, session_id: str) -> str:
        """The tool's `session_id` argument, else the connection's `?session=`."""
        return session_id.strip() or self.caller.session_id

    def session(self, session_id: str, *, create: bool = False) -> AgentSession | None:
        """The caller's session to link ledger events and writes to, or None.

        The connection's `?session=` is the harness's own and is created on
        first sight, as is any session a call creates on purpose (`create`:
        an `inject`, which only a harness makes) — but only for a caller who
        may write here: a read key or a viewer creates nothing. A
        `session_id` argument otherwise names a session the hooks already
        reported: one this workspace does not know is ignored (a model may
        mistype it), and the answer says so. Another user's session is
        refused (`session_belongs_to_another_user`), never joined.
        """
        given = session_id.strip()
        external_id = given or self.caller.session_id
        if not external_id:
            return None
        own = not given or create or given == self.caller.session_id
        if own and self.caller.can_write:
            return agent_session_get_or_create(
                workspace=self.workspace, external_id=external_id, user=self.user, app=self.app
            )
        try:
            return agent_session_own(
                workspace=self.workspace, external_id=external_id[:200], user=self.user
            )
        except NotFound:
            if own:  # the connection's own session, which this caller may not create
                return None
            note = (
                f"session_id {given[:80]!r} is not a session of this workspace, so this call "
                "is not tied to a session; pass the id given at session start."
            )
            if note not in self.notes:
                self.notes.append(note)
            return None

    def app_for(self, session: AgentSession | None) -> str:
        """What a write is tagged with: the connection's `?app=`, else its session's app."""
        return self.app or (session.app if session is not None else "")


Body = Callable[[Call], Answer]


def validated(serializer_class: type[S], values: Mapping[str, Any]) -> S:
    """Tool arguments checked by the REST endpoint's own input serializer."""
    serializer = serializer_class(data=dict(values))
    serializer.is_valid(raise_exception=True)
    return serializer


def caller_of(ctx: Context) -> Caller:
    request = ctx.request_context.request
    caller = request.scope.get(SCOPE_KEY) if request is not None else None
    if not isinstance(caller, Caller):
        # Only reachable if the MCP app were mounted without `McpEndpoint`.
        raise RuntimeError("An MCP tool was called on a request that was not authenticated.")
    return caller


async def run_tool(ctx: Context, body: Body, *, access: Access = Access.READ) -> CallToolResult:
    caller = caller_of(ctx)
    return await sync_to_async(_run, thread_sensitive=True)(caller, body, access)


def _run(caller: Caller, body: Body, access: Access) -> CallToolResult:
    # What Django's request_started / request_finished do for a view: drop
    # connections that are broken or past CONN_MAX_AGE.
    close_old_connections()
    try:
        if access > Access.READ:
            caller.require(access)
        call = Call(caller=caller)
        answer = body(call)
    except (MemflowError, drf_exceptions.APIException, Http404, PermissionDenied) as exc:
        return error_result(_error_json(exc))
    except Exception as exc:
        if (busy := busy_from_database(exc)) is not None:
            # A statement timeout or lock wait under load: retryable, as the REST API says.
            logger.warning("MCP tool stopped: %s (%s)", busy.code, exc)
            return error_result({**busy.as_json(), "retry_after": busy.retry_after})
        logger.exception("MCP tool failed")
        return error_result(
            {
                "code": "server_error",
                "detail": "The server failed to answer; it has been logged.",
            }
        )
    finally:
        close_old_connections()
    text = "\n".join([answer.text, *(f"({note})" for note in call.notes)])
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structuredContent=_plain(answer.data),
    )


def _error_json(exc: Exception) -> dict[str, Any]:
    response = api_exception_handler(exc, {})
    if response is None:  # not an API error after all
        return {"code": "server_error", "detail": str(exc)}
    return dict(response.data)


def error_result(body: dict[str, Any]) -> CallToolResult:
    data = _plain(body)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structuredContent=data,
        isError=True,
    )


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """JSON types only (datetimes as ISO strings, as the REST API renders them)."""
    result: dict[str, Any] = json.loads(json.dumps(data, cls=JSONEncoder))
    return result
