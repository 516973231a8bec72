"""`POST /api/v1/hooks/claude-code`: Claude Code's `"type": "http"` hooks, in its format both ways.

Claude Code posts its own hook JSON (the event is its `hook_event_name`) and
reads the response as it reads a command hook's stdout. memflow answers
`{"hookSpecificOutput": {…, "additionalContext": …}}` on the events where
Claude Code takes context, with `systemMessage` when the person must be told
something, `{}` otherwise: any other key would fail Claude Code's validation
of hook output.

The workspace (or the project root it is mapped to) and the app come from
the query string (`install-hooks` writes them into the URL, as it does for
the MCP URL), the key from the
`Authorization` header (Claude Code fills it from MEMFLOW_API_KEY, the one
variable the hook lists in `allowedEnvVars`). The server reads no path the
request names: events that need the agent's disk stay command hooks.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contexts.errors import Invalid
from contexts.hooks.api import HookJSONParser, refuse_oversized
from contexts.hooks.pipeline import HookOutcome, hook_handle
from contexts.hooks.registry import CLAUDE_EVENT_NAMES, CLAUDE_FAILURE_NAME
from contexts.rest.base import request_key
from contexts.tenancy.auth import request_user

# Claude Code's event name → memflow's.
BY_CLAUDE_NAME = {claude: event for event, claude in CLAUDE_EVENT_NAMES.items()}
BY_CLAUDE_NAME[CLAUDE_FAILURE_NAME] = "post-tool-use-failure"
# The events whose output Claude Code reads as hookSpecificOutput.additionalContext.
CONTEXT_EVENTS = frozenset({"session-start", "user-prompt", "post-tool-use", "subagent-start"})
# Set from the URL: the hook JSON itself has no place for them.
QUERY_FIELDS = ("workspace", "app", "project_root")


def claude_event(payload: Any) -> str:
    """memflow's event for Claude Code's `hook_event_name`, or `Invalid`."""
    name = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if not isinstance(name, str) or not name:
        raise Invalid(
            "The hook JSON has no hook_event_name; this endpoint takes Claude Code's hook input "
            "as it posts it.",
            code="hook_event_name_required",
        )
    event = BY_CLAUDE_NAME.get(name)
    if event is None:
        raise Invalid(
            f"memflow does not handle Claude Code's {name!r} hook; register it for one of "
            f"{', '.join(sorted(BY_CLAUDE_NAME))}.",
            code="unknown_event",
        )
    return event


def claude_answer(outcome: HookOutcome) -> dict[str, Any]:
    """What Claude Code accepts as a hook's output: the context, a message for the person
    (`systemMessage`, which Claude Code takes on every event), or nothing."""
    ctx = outcome.context
    answer: dict[str, Any] = {}
    if ctx.messages:
        answer["systemMessage"] = "\n".join(ctx.messages)
    text = outcome.text
    if text and ctx.event in CONTEXT_EVENTS:
        name = CLAUDE_FAILURE_NAME if ctx.tool_failed else CLAUDE_EVENT_NAMES[ctx.event]
        answer["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": text}
    return answer


class ClaudeHookApi(APIView):
    parser_classes = [HookJSONParser]

    @extend_schema(
        operation_id="hook_claude_code",
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        parameters=[
            OpenApiParameter("workspace", str, description="the workspace's slug"),
            OpenApiParameter("app", str, description="the harness (default claude-code)"),
        ],
        description=(
            'The target of Claude Code\'s `"type": "http"` hooks: its hook input verbatim, '
            "the event named by `hook_event_name`; the answer is Claude Code's hook output "
            "(`hookSpecificOutput.additionalContext` on UserPromptSubmit and PostToolUse, `{}` "
            "otherwise). A body's paths (`transcript_path`, `persistedOutputPath`) are kept as "
            "text and never read."
        ),
    )
    def post(self, request: Request) -> Response:
        refuse_oversized(request)
        payload = request.data
        event = claude_event(payload)
        assert isinstance(payload, dict)  # claude_event refuses anything else
        for name in QUERY_FIELDS:
            value = request.query_params.get(name)
            if value and name not in payload:
                payload = {**payload, name: value}
        outcome = hook_handle(
            event=event,
            payload=payload,
            user=request_user(request),
            api_key=request_key(request),
        )
        return Response(claude_answer(outcome))
