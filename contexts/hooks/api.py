"""`POST /api/v1/hooks/{event}`: the harness's own hook JSON in, blocks out."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contexts.errors import SafeJSONParser, TooLarge
from contexts.hooks.pipeline import hook_handle
from contexts.rest.base import request_key
from contexts.tenancy.auth import request_user


class HookJSONParser(SafeJSONParser):
    # A tool result may hold NUL or broken UTF-8: stored with U+FFFD, not refused.
    clean = True


def refuse_oversized(request: Request) -> None:
    """Before the body is read: a hook sits on the hot path of every turn."""
    length = str(request.META.get("CONTENT_LENGTH") or "")
    if length.isdigit() and int(length) > settings.MEMFLOW_HOOK_MAX_BYTES:
        raise TooLarge(
            f"A hook body is at most {settings.MEMFLOW_HOOK_MAX_BYTES:,} bytes "
            "(MEMFLOW_HOOK_MAX_BYTES)."
        )


class HookApi(APIView):
    parser_classes = [HookJSONParser]

    @extend_schema(
        operation_id="hook",
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        description=(
            "Accepts Claude Code's hook input verbatim (session_id, cwd, hook_event_name, prompt, "
            "tool_name, tool_input, tool_response, trigger, …) or dsh's, plus memflow's optional "
            "`workspace`, `app`, `device`, `env`, `project_root`, and `memflow_output`: the whole "
            "output of a tool call Claude Code cut, as `memflow hook` read it from "
            "`persistedOutputPath` on the agent's machine ({text | base64, size, sha256} or "
            "{refused, size}); the server never reads a path itself. Unknown fields are kept. "
            "`post-tool-use-failure` is a post-tool-use flagged failed."
        ),
    )
    def post(self, request: Request, event: str) -> Response:
        refuse_oversized(request)
        outcome = hook_handle(
            event=event,
            payload=request.data,
            user=request_user(request),
            api_key=request_key(request),
        )
        return Response(outcome.as_json())
