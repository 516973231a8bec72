"""REST endpoints of flowctx, under /api/v1/workspaces/{slug}/.

- `compression/`: store a tool result, get its projection; `compression/{hash}/`
  gives the original back byte for byte.
- `sessions/{id}/summaries/`: the session's handoff notes; `…/fold/` asks for a fold.
- `sessions/{id}/scratchpad/`: the model's own working memory.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.errors import Invalid
from contexts.flowctx import selectors, services, tasks
from contexts.flowctx.originals import original_response
from contexts.models import CompressionRef, Scratchpad, SummaryNode
from contexts.rest.base import PAGE_PARAMETERS, WorkspaceApiView, page_response, page_schema
from contexts.tenancy.auth import request_user
from contexts.tenancy.knobs import knob
from contexts.tenancy.selectors import agent_session_own
from contexts.tenancy.services import agent_session_get_or_create


def _ref_json(ref: CompressionRef) -> dict[str, Any]:
    return {
        "sha256": ref.sha256,
        "size": ref.size,
        "content_type": ref.content_type,
        "kind": ref.kind,
        "tool_name": ref.tool_name,
        "exit_code": ref.exit_code,
        "pinned": ref.pinned,
        "created_at": ref.created_at,
        "expires_at": ref.expires_at,
        # Only part of the output was kept (see services.TRUNCATED_PARAM).
        "truncated": services.truncated_from(ref.content_type) is not None,
        "original_size": services.truncated_from(ref.content_type) or ref.size,
        # The credentials cut out before it was kept (CompressionRef.masked).
        "masked": list(ref.masked or []),
        "byte_exact": not ref.masked and services.truncated_from(ref.content_type) is None,
    }


class CompressionRefOutput(serializers.Serializer):
    sha256 = serializers.CharField()
    size = serializers.IntegerField()
    content_type = serializers.CharField()
    kind = serializers.CharField()
    tool_name = serializers.CharField()
    exit_code = serializers.IntegerField(allow_null=True)
    pinned = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    truncated = serializers.BooleanField()
    original_size = serializers.IntegerField()
    masked = serializers.ListField(child=serializers.CharField())
    byte_exact = serializers.BooleanField()


class CompressionCreateApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
        content_base64 = serializers.CharField(required=False, allow_blank=True)
        content_type = serializers.CharField(required=False, max_length=200)
        tool_name = serializers.CharField(required=False, allow_blank=True, max_length=200)
        exit_code = serializers.IntegerField(required=False, allow_null=True)
        session_id = serializers.CharField(required=False, max_length=200)
        budget_tokens = serializers.IntegerField(required=False, min_value=50, max_value=1_000_000)

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if ("text" in attrs) == ("content_base64" in attrs):
                raise serializers.ValidationError(
                    "Send exactly one of `text` and `content_base64`."
                )
            return attrs

    class OutputSerializer(serializers.Serializer):
        ref = CompressionRefOutput()
        projected = serializers.BooleanField()
        kind = serializers.CharField()
        text = serializers.CharField()
        original_chars = serializers.IntegerField()
        projected_chars = serializers.IntegerField()

    @extend_schema(
        operation_id="compression_create",
        request=InputSerializer,
        responses={201: OutputSerializer},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if "text" in values:
            content = values["text"].encode("utf-8", errors="surrogatepass")
            content_type = values.get("content_type") or "text/plain; charset=utf-8"
        else:
            try:
                content = base64.b64decode(values["content_base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise Invalid(
                    "`content_base64` is not valid base64.", code="invalid_base64"
                ) from exc
            content_type = values.get("content_type") or "application/octet-stream"
        session = None
        if values.get("session_id"):
            session = agent_session_get_or_create(
                workspace=self.workspace,
                external_id=values["session_id"],
                user=request_user(request),
            )
        result = services.compression_store(
            workspace=self.workspace,
            content=content,
            content_type=content_type,
            tool_name=values.get("tool_name", ""),
            exit_code=values.get("exit_code"),
            session=session,
            budget_tokens=values.get("budget_tokens"),
        )
        projection = result.projection
        body = {
            "ref": _ref_json(result.ref),
            "projected": result.projected,
            "kind": projection.kind if projection else "",
            "text": result.text,
            "original_chars": projection.original_chars if projection else len(result.text),
            "projected_chars": len(result.text),
        }
        return Response(body, status=status.HTTP_201_CREATED)


class CompressionDetailApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        pinned = serializers.BooleanField()

    @extend_schema(
        operation_id="compression_get",
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
        description="The original as kept, as an attachment: byte for byte unless it held "
        "credentials, which were masked (`X-Memflow-Masked` lists them); the stored content type "
        "when it is inert text or data (else `application/octet-stream`), the stored one in "
        "`X-Memflow-Content-Type`.",
    )
    def get(self, request: Request, slug: str, sha256: str) -> HttpResponse:
        ref = selectors.compression_get(workspace=self.workspace, sha256=sha256)
        return original_response(services.compression_masked_legacy(ref=ref))

    @extend_schema(
        operation_id="compression_pin", request=InputSerializer, responses=CompressionRefOutput
    )
    def patch(self, request: Request, slug: str, sha256: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ref = selectors.compression_get(workspace=self.workspace, sha256=sha256)
        ref = services.compression_pin(ref=ref, pinned=data.validated_data["pinned"])
        return Response(_ref_json(ref))


# --- summaries ------------------------------------------------------------------------------


class SummaryOutput(serializers.Serializer):
    node = serializers.CharField(source="node_id")
    depth = serializers.IntegerField()
    start_turn = serializers.IntegerField()
    end_turn = serializers.IntegerField()
    active = serializers.BooleanField(source="is_active")
    parent = serializers.SerializerMethodField()  # type: ignore[assignment]
    builder = serializers.CharField()
    tokens = serializers.IntegerField()
    text = serializers.CharField()
    created_at = serializers.DateTimeField()

    def get_parent(self, node: SummaryNode) -> str | None:
        return node.parent.node_id if node.parent_id and node.parent else None


class SummaryListApi(WorkspaceApiView):
    @extend_schema(
        operation_id="summary_list",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("SummaryPage", SummaryOutput),
        description="The active handoff notes of the session, oldest first; `?all=1` adds "
        "the nodes already condensed into a higher one.",
    )
    def get(self, request: Request, slug: str, session_id: str) -> Response:
        session = selectors.session_for(workspace=self.workspace, session_id=session_id)
        if request.query_params.get("all") in ("1", "true", "yes"):
            nodes = selectors.summaries_all(session=session)
        else:
            nodes = selectors.summaries_active(session=session)
        return page_response(
            request, nodes, render=lambda rows: SummaryOutput(rows, many=True).data
        )


class SummaryFoldApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        force = serializers.BooleanField(default=False)

    class OutputSerializer(serializers.Serializer):
        generation = serializers.IntegerField()

    @extend_schema(
        operation_id="summary_fold",
        request=InputSerializer,
        responses={202: OutputSerializer},
        description="Queue a fold of the session's history (it runs in the worker). A newer "
        "request supersedes a fold still running.",
    )
    def post(self, request: Request, slug: str, session_id: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # A fold rewrites the session's notes: its own user's to ask for.
        session = agent_session_own(
            workspace=self.workspace, external_id=session_id, user=request_user(request)
        )
        generation = tasks.summaries_enqueue(session=session, force=data.validated_data["force"])
        return Response({"generation": generation}, status=status.HTTP_202_ACCEPTED)


class SummaryDetailApi(WorkspaceApiView):
    @extend_schema(operation_id="summary_get", responses=SummaryOutput)
    def get(self, request: Request, slug: str, session_id: str, node_id: str) -> Response:
        session = selectors.session_for(workspace=self.workspace, session_id=session_id)
        node = selectors.summary_get(session=session, node_id=node_id)
        return Response(SummaryOutput(node).data)


# --- scratchpad -----------------------------------------------------------------------------


class ScratchpadOutput(serializers.Serializer):
    text = serializers.CharField()
    chars_current = serializers.IntegerField()
    chars_limit = serializers.IntegerField()
    version = serializers.IntegerField()
    enabled = serializers.BooleanField()


def scratchpad_json(pad: Scratchpad, workspace: Any) -> dict[str, Any]:
    return {
        "text": pad.text,
        "chars_current": len(pad.text),
        "chars_limit": int(knob(workspace, "scratchpad_max_chars")),
        "version": pad.version,
        "enabled": bool(knob(workspace, "scratchpad")),
    }


class ScratchpadApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        op = serializers.ChoiceField(choices=services.SCRATCHPAD_OPS)
        text = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=1_000_000)
        old_text = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)

    @extend_schema(operation_id="scratchpad_get", responses=ScratchpadOutput)
    def get(self, request: Request, slug: str, session_id: str) -> Response:
        session = selectors.session_for(workspace=self.workspace, session_id=session_id)
        return Response(scratchpad_json(selectors.scratchpad_get(session=session), self.workspace))

    @extend_schema(
        operation_id="scratchpad_edit", request=InputSerializer, responses=ScratchpadOutput
    )
    def post(self, request: Request, slug: str, session_id: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        with transaction.atomic():
            session = agent_session_get_or_create(
                workspace=self.workspace, external_id=session_id, user=request_user(request)
            )
            pad = services.scratchpad_edit(
                session=session,
                op=values["op"],
                text=values["text"],
                old_text=values.get("old_text", ""),
            )
        return Response(scratchpad_json(pad, self.workspace))
