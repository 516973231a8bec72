"""REST endpoints for workspaces, members, API keys and the list of agent sessions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contexts.dashboard import selectors as dash_selectors
from contexts.errors import Invalid
from contexts.models import AgentSession, ApiKey, Membership, Workspace
from contexts.rest.base import (
    PAGE_PARAMETERS,
    WorkspaceApiView,
    page_response,
    page_schema,
    request_key,
)
from contexts.tenancy import knobs, selectors, services
from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access


class WorkspaceOutput(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.CharField(required=False)
    created_at = serializers.DateTimeField()


def _workspace_json(workspace: Any, role: str | None) -> dict[str, Any]:
    data = dict(WorkspaceOutput(workspace).data)
    data["role"] = role
    return data


class WorkspaceListCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        slug = serializers.CharField(max_length=64)
        name = serializers.CharField(max_length=200, required=False, allow_blank=True)

    @extend_schema(
        operation_id="workspace_list",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("WorkspacePage", WorkspaceOutput),
    )
    def get(self, request: Request) -> Response:
        key = request_key(request)
        memberships = selectors.membership_list_for_user(user=request.user)
        if key is not None and key.workspace_id is not None:
            memberships = memberships.filter(workspace_id=key.workspace_id)
        return page_response(
            request,
            memberships,
            render=lambda rows: [_workspace_json(m.workspace, m.role) for m in rows],
        )

    @extend_schema(
        operation_id="workspace_create", request=InputSerializer, responses={201: WorkspaceOutput}
    )
    def post(self, request: Request) -> Response:
        selectors.workspace_create_check(api_key=request_key(request))
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = services.workspace_create(user=request_user(request), **data.validated_data)
        return Response(
            _workspace_json(workspace, Membership.Role.OWNER), status=status.HTTP_201_CREATED
        )


class WorkspaceDetailOutput(WorkspaceOutput):
    settings = serializers.DictField(help_text="Every knob's value in force, by name.")
    progress = serializers.DictField(
        help_text="Changes with side effects and how far they have got, by knob name "
        "(`embedder`: the backend requested and serving, the re-embed's `done` of `total`)."
    )


def _workspace_detail_json(workspace: Workspace, role: str | None) -> dict[str, Any]:
    return {
        **_workspace_json(workspace, role),
        "settings": {k.name: k.value_in(workspace) for k in knobs.registered_knobs()},
        "progress": knobs.knobs_progress(workspace),
    }


def _actor(request: Request) -> Actor:
    return Actor.for_request(request, origin=Origin.REST)


def _refuse_unknown_fields(data: Any, known: Mapping[str, Any]) -> None:
    """A field the endpoint does not know is a 400, not a change silently not made."""
    unknown = sorted(set(data) - set(known)) if isinstance(data, Mapping) else []
    if unknown:
        raise Invalid(
            f"Unknown field {unknown[0]!r}; this endpoint takes {', '.join(sorted(known))}.",
            code="unknown_field",
            extra={"field": unknown[0]},
        )


class WorkspaceDetailApi(WorkspaceApiView):
    method_access = {"PATCH": Access.ADMIN, "DELETE": Access.ADMIN}

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False)
        settings = serializers.DictField(
            required=False,
            help_text="Knobs to change, by name; null puts one back to its default. "
            "Refused as a whole (400, `unknown_setting` or `invalid_setting`, naming the "
            "`setting`) if any is unknown, of the wrong type or out of bounds. `embedder` "
            "re-embeds every memory in the background (see `progress`).",
        )

    @extend_schema(operation_id="workspace_get", responses=WorkspaceDetailOutput)
    def get(self, request: Request, slug: str) -> Response:
        return Response(_workspace_detail_json(self.workspace, self.membership.role))

    @extend_schema(
        operation_id="workspace_update", request=InputSerializer, responses=WorkspaceDetailOutput
    )
    def patch(self, request: Request, slug: str) -> Response:
        _refuse_unknown_fields(request.data, self.InputSerializer().fields)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        changes = values.pop("settings", None)
        cleaned = {} if changes is None else knobs.workspace_settings_clean(changes, applied=True)
        applied = knobs.knobs_applied(cleaned)
        # The changes with side effects first: the one most likely refused
        # (an embedder not installed here) refuses before anything is written.
        for name in applied:
            knobs.knob_apply(
                workspace=self.workspace, name=name, value=cleaned[name], actor=_actor(request)
            )
        workspace = services.workspace_update(
            workspace=self.workspace, actor=_actor(request), **values
        )
        plain = {n: v for n, v in (changes or {}).items() if n not in applied}
        if plain:
            knobs.workspace_settings_update(
                workspace=workspace, values=plain, actor=_actor(request)
            )
        return Response(_workspace_detail_json(workspace, self.membership.role))

    @extend_schema(operation_id="workspace_delete", responses={204: None})
    def delete(self, request: Request, slug: str) -> Response:
        services.workspace_delete(workspace=self.workspace)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberOutput(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class MemberListCreateApi(WorkspaceApiView):
    method_access = {"POST": Access.ADMIN}

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        role = serializers.ChoiceField(
            choices=Membership.Role.choices, default=Membership.Role.EDITOR
        )

    @extend_schema(
        operation_id="member_list",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("MemberPage", MemberOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        return page_response(
            request,
            selectors.membership_list(workspace=self.workspace),
            render=lambda rows: MemberOutput(rows, many=True).data,
        )

    @extend_schema(
        operation_id="member_add", request=InputSerializer, responses={201: MemberOutput}
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_set(
            workspace=self.workspace, actor=_actor(request), **data.validated_data
        )
        return Response(MemberOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailApi(WorkspaceApiView):
    method_access = {"PATCH": Access.ADMIN, "DELETE": Access.ADMIN}

    class InputSerializer(serializers.Serializer):
        role = serializers.ChoiceField(choices=Membership.Role.choices)

    @extend_schema(operation_id="member_update", request=InputSerializer, responses=MemberOutput)
    def patch(self, request: Request, slug: str, username: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_set(
            workspace=self.workspace,
            username=username,
            role=data.validated_data["role"],
            actor=_actor(request),
        )
        return Response(MemberOutput(membership).data)

    @extend_schema(operation_id="member_remove", responses={204: None})
    def delete(self, request: Request, slug: str, username: str) -> Response:
        services.membership_remove(
            workspace=self.workspace, username=username, actor=_actor(request)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class KeyOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    scope = serializers.CharField()
    workspace = serializers.CharField(source="workspace.slug", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class CreatedKeyOutput(KeyOutput):
    key = serializers.CharField(help_text="The raw key. Shown once; store it now.")


class KeyListCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
        scope = serializers.ChoiceField(choices=ApiKey.Scope.choices, default=ApiKey.Scope.WRITE)
        workspace = serializers.CharField(
            max_length=64, required=False, allow_null=True, default=None
        )

    @extend_schema(
        operation_id="key_list",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("KeyPage", KeyOutput),
        description="The keys this credential may manage: all of them for a dashboard login; "
        "for an unrestricted key, itself and the keys of no wider scope; for a key "
        "restricted to a workspace, itself only.",
    )
    def get(self, request: Request) -> Response:
        keys = selectors.apikey_list(user=request.user, by_key=request_key(request))
        return page_response(request, keys, render=lambda rows: KeyOutput(rows, many=True).data)

    @extend_schema(
        operation_id="key_create", request=InputSerializer, responses={201: CreatedKeyOutput}
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        key = request_key(request)
        workspace: Workspace | None = None
        if values["workspace"]:
            workspace, _ = selectors.workspace_access(
                user=request.user, slug=values["workspace"], access=Access.READ, api_key=key
            )
        created = services.apikey_create(
            user=request_user(request),
            name=values["name"],
            scope=values["scope"],
            workspace=workspace,
            created_with=key,
            actor=_actor(request),
        )
        body = dict(KeyOutput(created.key).data)
        body["key"] = created.raw
        return Response(body, status=status.HTTP_201_CREATED)


class KeyRevokeApi(APIView):
    @extend_schema(
        operation_id="key_revoke",
        responses={204: None},
        description="Any key may revoke itself. Another key of the user needs an unrestricted "
        "write or admin key of at least its scope (403 `key_scope`).",
    )
    def delete(self, request: Request, key_id: int) -> Response:
        services.apikey_revoke(
            user=request_user(request),
            key_id=key_id,
            revoked_with=request_key(request),
            actor=_actor(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class MuteApi(WorkspaceApiView):
    """Mute the per-turn working context (recall, lessons, index) for a while."""

    class InputSerializer(serializers.Serializer):
        minutes = serializers.IntegerField(
            min_value=0, max_value=60 * 24 * 30, help_text="0 unmutes"
        )
        scope = serializers.ChoiceField(choices=["workspace", "user"], default="workspace")

    class OutputSerializer(serializers.Serializer):
        muted_until = serializers.CharField(allow_null=True)
        scope = serializers.CharField()

    @extend_schema(
        operation_id="workspace_mute", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        until = services.workspace_mute(
            workspace=self.workspace,
            user=request_user(request),
            minutes=values["minutes"],
            for_user=values["scope"] == "user",
        )
        return Response({"muted_until": until, "scope": values["scope"]})


class SessionOutput(serializers.Serializer):
    id = serializers.IntegerField(help_text="memflow's id of the session")
    session_id = serializers.CharField(
        source="external_id", help_text="The harness's own session id; the detail's path key."
    )
    app = serializers.CharField()
    directory = serializers.CharField(source="cwd")
    device = serializers.CharField()
    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    open = serializers.SerializerMethodField()
    turns = serializers.IntegerField()

    def get_open(self, session: AgentSession) -> bool:
        return session.ended_at is None


class SessionRowOutput(SessionOutput):
    events = serializers.IntegerField(source="n_events")
    injections = serializers.IntegerField(source="n_injections")


class SessionListApi(WorkspaceApiView):
    """The workspace's agent sessions, newest first, as the dashboard lists them."""

    class Params(serializers.Serializer):
        app = serializers.CharField(required=False, max_length=64)
        directory = serializers.CharField(
            required=False, max_length=4096, help_text="this directory or one below it"
        )
        state = serializers.ChoiceField(choices=["open", "ended", "all"], default="all")
        since = serializers.DateTimeField(required=False, help_text="started at or after")

    class OutputSerializer(serializers.Serializer):
        count = serializers.IntegerField(help_text="sessions matching the filters, all pages")
        offset = serializers.IntegerField()
        limit = serializers.IntegerField()
        results = SessionRowOutput(many=True)

    @extend_schema(
        operation_id="session_list",
        parameters=[Params, *PAGE_PARAMETERS],
        responses=OutputSerializer,
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        values: dict[str, Any] = params.validated_data
        sessions = dash_selectors.session_list_annotated(
            workspace=self.workspace,
            app=values.get("app", ""),
            state=values["state"],
            directory=values.get("directory", ""),
            since=values.get("since"),
        )
        return page_response(
            request, sessions, render=lambda rows: SessionRowOutput(rows, many=True).data
        )
