"""REST endpoints for core memory (USER / MEMORY) and the archive tier."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.errors import Forbidden
from contexts.models import AgentSession
from contexts.rest.base import PAGE_PARAMETERS, page_response, page_schema, request_key
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access, key_allows
from memories import core, selectors
from memories.api.memories import MemoryApiView, SessionField, memory_json, rest_actor, run_recall
from memories.models import CoreMemory, CoreRevision


class CoreViewOutput(serializers.Serializer):
    target = serializers.CharField()
    content = serializers.CharField()
    lines = serializers.ListField(child=serializers.CharField())
    chars = serializers.IntegerField()
    limit = serializers.IntegerField()
    percent = serializers.IntegerField()
    version = serializers.IntegerField()
    rendered = serializers.CharField()
    hidden = serializers.BooleanField(help_text="USER of another member: shown to them only")


def view_json(view: core.CoreView) -> dict[str, Any]:
    return {
        "target": view.scope,
        "content": view.content,
        "lines": view.lines,
        "chars": view.chars,
        "limit": view.limit,
        "percent": view.percent,
        "version": view.version,
        "rendered": view.rendered if not view.hidden else "",
        "hidden": view.hidden,
    }


def revision_json(revision: CoreRevision) -> dict[str, Any]:
    return {
        "version": revision.version,
        "action": revision.action,
        "user": revision.user.username if revision.user else None,
        "session": revision.session.external_id if revision.session else None,
        "before": revision.before,
        "after": revision.after,
        "detail": revision.detail,
        "created_at": revision.created_at,
    }


class CoreApi(MemoryApiView):
    class Params(serializers.Serializer):
        session = SessionField(help_text="Show what this session sees: its frozen snapshot.")

    class OutputSerializer(serializers.Serializer):
        # null: a session that never froze the documents sees none.
        user = CoreViewOutput(allow_null=True)
        memory = CoreViewOutput(allow_null=True)
        frozen = serializers.BooleanField()
        frozen_at = serializers.CharField(allow_null=True)

    @extend_schema(operation_id="core_get", parameters=[Params], responses=OutputSerializer)
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        external_id = params.validated_data.get("session")
        user = request_user(request)
        if external_id:
            session = AgentSession.objects.filter(
                workspace=self.workspace, external_id=external_id
            ).first()
            views = core.core_snapshot_views(session=session, viewer=user) if session else {}
            return Response(
                {
                    "user": view_json(views[CoreMemory.Scope.USER])
                    if CoreMemory.Scope.USER in views
                    else None,
                    "memory": view_json(views[CoreMemory.Scope.WORKSPACE])
                    if CoreMemory.Scope.WORKSPACE in views
                    else None,
                    "frozen": bool(views),
                    "frozen_at": (session.core_snapshot or {}).get("frozen_at")
                    if session
                    else None,
                }
            )
        return Response(
            {
                "user": view_json(
                    core.core_view(scope=CoreMemory.Scope.USER, user=user, workspace=self.workspace)
                ),
                "memory": view_json(
                    core.core_view(
                        scope=CoreMemory.Scope.WORKSPACE, user=None, workspace=self.workspace
                    )
                ),
                "frozen": False,
                "frozen_at": None,
            }
        )


def _owner(view: MemoryApiView, request: Request, scope: str) -> Any:
    """USER documents belong to the caller; MEMORY to the workspace."""
    return request_user(request) if scope == CoreMemory.Scope.USER else None


class CoreEditApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        action = serializers.ChoiceField(choices=["add", "replace", "remove"])
        content = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=20_000
        )
        old_text = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=20_000
        )
        session = SessionField()

    class LimitSerializer(serializers.Serializer):
        char_limit = serializers.IntegerField(min_value=100, max_value=100_000)

    class OutputSerializer(serializers.Serializer):
        outcome = serializers.CharField()
        document = CoreViewOutput()
        version = serializers.IntegerField()

    @extend_schema(operation_id="core_edit", request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request, slug: str, target: str) -> Response:
        scope = core.scope_for(target)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        edit = core.core_edit(
            scope=scope,
            action=values["action"],
            workspace=self.workspace,
            user=_owner(self, request, scope),
            content=values["content"],
            old_text=values["old_text"],
            session=self.session_for(request, values.get("session")),
            actor=rest_actor(request),
        )
        return Response(
            {
                "outcome": edit.outcome,
                "document": view_json(edit.view),
                "version": edit.view.version,
            }
        )

    @extend_schema(operation_id="core_set_limit", request=LimitSerializer, responses=CoreViewOutput)
    def patch(self, request: Request, slug: str, target: str) -> Response:
        scope = core.scope_for(target)
        if scope == CoreMemory.Scope.WORKSPACE and not (
            self.membership.is_owner and key_allows(request_key(request), Access.ADMIN)
        ):
            # The workspace's document limit is the owners' decision.
            raise Forbidden(
                "Only an owner, with an admin key, can change MEMORY's limit.",
                code="owner_required",
            )
        data = self.LimitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        view = core.core_set_limit(
            scope=scope,
            workspace=self.workspace,
            user=_owner(self, request, scope),
            limit=data.validated_data["char_limit"],
            actor=rest_actor(request),
        )
        return Response(view_json(view))


class RevisionOutput(serializers.Serializer):
    version = serializers.IntegerField()
    action = serializers.CharField()
    user = serializers.CharField(allow_null=True)
    session = serializers.CharField(allow_null=True)
    before = serializers.CharField()
    after = serializers.CharField()
    detail = serializers.JSONField()
    created_at = serializers.DateTimeField()


class CoreRevisionsApi(MemoryApiView):
    @extend_schema(
        operation_id="core_revisions",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("CoreRevisionPage", RevisionOutput),
    )
    def get(self, request: Request, slug: str, target: str) -> Response:
        scope = core.scope_for(target)
        revisions = core.core_revisions(
            scope=scope, workspace=self.workspace, user=_owner(self, request, scope)
        )
        return page_response(
            request, revisions, render=lambda rows: [revision_json(r) for r in rows]
        )


class CoreRevertApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1)
        session = SessionField()

    @extend_schema(
        operation_id="core_revert", request=InputSerializer, responses=CoreEditApi.OutputSerializer
    )
    def post(self, request: Request, slug: str, target: str) -> Response:
        scope = core.scope_for(target)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        edit = core.core_revert(
            scope=scope,
            workspace=self.workspace,
            user=_owner(self, request, scope),
            version=values["version"],
            session=self.session_for(request, values.get("session")),
            actor=rest_actor(request),
        )
        return Response(
            {
                "outcome": edit.outcome,
                "document": view_json(edit.view),
                "version": edit.view.version,
            }
        )


class CoreMoveApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        old_text = serializers.CharField(max_length=20_000)
        category = serializers.ChoiceField(choices=list(core.ARCHIVE_CATEGORIES))
        session = SessionField()

    @extend_schema(
        operation_id="core_move_to_archive", request=InputSerializer, responses=OpenApiTypes.OBJECT
    )
    def post(self, request: Request, slug: str, target: str) -> Response:
        scope = core.scope_for(target)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        memory = core.core_move_to_archive(
            scope=scope,
            workspace=self.workspace,
            user=_owner(self, request, scope),
            old_text=values["old_text"],
            category=values["category"],
            session=self.session_for(request, values.get("session")),
            actor=rest_actor(request),
        )
        view = core.core_view(
            scope=scope, user=_owner(self, request, scope), workspace=self.workspace
        )
        return Response({"memory": memory_json(memory), "document": view_json(view)})


class CoreFreezeApi(MemoryApiView):
    """Freeze both documents for a session — what the session-start hook does."""

    class InputSerializer(serializers.Serializer):
        session = serializers.CharField(max_length=200)

    @extend_schema(
        operation_id="core_freeze", request=InputSerializer, responses=OpenApiTypes.OBJECT
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session = self.session_for(request, data.validated_data["session"])
        assert session is not None
        core.core_freeze(session=session)
        return Response(core.snapshot_for(session=session, viewer=request_user(request)))


class ArchiveRecallApi(MemoryApiView):
    method_access = {"POST": Access.READ}

    class InputSerializer(serializers.Serializer):
        query = serializers.CharField(max_length=10_000)
        k = serializers.IntegerField(min_value=1, max_value=100, default=10)
        categories = serializers.ListField(
            child=serializers.ChoiceField(choices=list(core.ARCHIVE_CATEGORIES)), required=False
        )
        mode = serializers.ChoiceField(choices=["full", "index", "block"], default="full")
        budget_chars = serializers.IntegerField(min_value=100, max_value=100_000, required=False)
        session = SessionField()

    @extend_schema(
        operation_id="archive_recall", request=InputSerializer, responses=OpenApiTypes.OBJECT
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        categories = values.get("categories") or list(core.ARCHIVE_CATEGORIES)
        filters = selectors.MemoryFilters(compartments=categories)
        return Response(run_recall(self, request, values, filters))
