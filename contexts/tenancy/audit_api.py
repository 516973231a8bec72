"""The audit trail through REST: `GET /api/v1/workspaces/{slug}/audit/`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.models import AuditEvent
from contexts.rest.base import WorkspaceApiView
from contexts.tenancy.audit import audit_list, audit_withhold


class AuditEventOutput(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    key = serializers.CharField(source="key.prefix", allow_null=True, default=None)
    origin = serializers.CharField()
    action = serializers.CharField()
    target = serializers.CharField()
    before = serializers.CharField()
    after = serializers.CharField()
    detail = serializers.JSONField()


class AuditPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    results = AuditEventOutput(many=True)


class AuditListApi(WorkspaceApiView):
    class Params(serializers.Serializer):
        target = serializers.CharField(required=False, max_length=120, help_text="memory:42")
        user = serializers.CharField(required=False, max_length=150)
        action = serializers.CharField(
            required=False, max_length=48, help_text="memory.forget, or a family: memory"
        )
        origin = serializers.ChoiceField(choices=AuditEvent.Origin.choices, required=False)
        limit = serializers.IntegerField(min_value=1, max_value=200, default=50)
        offset = serializers.IntegerField(min_value=0, max_value=1_000_000_000, default=0)

    @extend_schema(operation_id="audit_list", parameters=[Params], responses=AuditPageOutput)
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        f: dict[str, Any] = params.validated_data
        rows = audit_list(
            workspace=self.workspace,
            target=f.get("target"),
            username=f.get("user"),
            action=f.get("action"),
            origin=f.get("origin"),
        )
        page = rows[f["offset"] : f["offset"] + f["limit"]]
        return Response(
            {
                "count": rows.count(),
                "offset": f["offset"],
                "limit": f["limit"],
                "results": AuditEventOutput(
                    audit_withhold(page, workspace=self.workspace, viewer=request.user), many=True
                ).data,
            }
        )
