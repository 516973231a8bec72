"""REST endpoints of the memory engine, under /api/v1/workspaces/{slug}/."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.models import AgentSession
from contexts.rest.base import PAGE_PARAMETERS, WorkspaceApiView, page_response
from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.auth import request_user
from contexts.tenancy.knobs import knob
from contexts.tenancy.selectors import Access
from memories import rendering, selectors, services
from memories.decay import retention
from memories.models import InjectionEvent, Memory

MAX_BULK = 1000
MAX_TEXT = 200_000  # a hard cap before any work; the workspace's own limit is lower


class MemoryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    compartment = serializers.CharField()
    state_key = serializers.CharField()
    state_value = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    app = serializers.CharField()
    session = serializers.CharField(allow_null=True)
    strength = serializers.FloatField()
    access_count = serializers.IntegerField()
    last_accessed = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    superseded_by = serializers.IntegerField(allow_null=True)
    pinned = serializers.BooleanField()
    private = serializers.BooleanField(help_text="Seen by its author only.")
    expires_at = serializers.DateTimeField(allow_null=True)
    age = serializers.CharField()
    retention = serializers.FloatField()
    evidence_ids = serializers.ListField(child=serializers.IntegerField())
    metadata = serializers.DictField()
    forgotten = serializers.DictField(
        allow_null=True, help_text="The tombstone (at, by, reason, purge_after), or null."
    )


def memory_json(
    memory: Memory, *, now: Any = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    now = now or timezone.now()
    data = {
        "id": memory.pk,
        "text": memory.text,
        "compartment": memory.compartment,
        "state_key": memory.state_key,
        "state_value": memory.state_value,
        "source": memory.source,
        "app": memory.app,
        "session": memory.session.external_id if memory.session_id and memory.session else None,
        "strength": memory.strength,
        "access_count": memory.access_count,
        "last_accessed": memory.last_accessed,
        "created_at": memory.created_at,
        "valid_from": memory.valid_from,
        "valid_to": memory.valid_to,
        "superseded_by": memory.superseded_by_id,
        "pinned": memory.pinned,
        "private": memory.private,
        "expires_at": memory.expires_at,
        "age": rendering.age_label(memory.created_at, now),
        "retention": round(
            retention(
                last_accessed=memory.last_accessed,
                access_count=memory.access_count,
                source=memory.source,
                now=now,
                base_tau_days=float(knob(memory.workspace, "decay_tau_days")),
            ),
            4,
        ),
        "evidence_ids": sorted(memory.metadata.get("evidence_ids", [])) if memory.metadata else [],
        "metadata": memory.metadata or {},
        "forgotten": _tombstone_json(memory),
    }
    output = dict(MemoryOutput(data).data)
    if extra:
        output.update(extra)
    return output


def _tombstone_json(memory: Memory) -> dict[str, Any] | None:
    if memory.forgotten_at is None:
        return None
    by = memory.forgotten_by
    return {
        "at": memory.forgotten_at.isoformat(),
        "by": by.get_username() if by is not None else None,
        "reason": memory.forgotten_reason,
        "purge_after": (
            due.isoformat() if (due := selectors.memory_purge_due(memory=memory)) else None
        ),
    }


def rest_actor(request: Request) -> Actor:
    return Actor.for_request(request, origin=Origin.REST)


class SessionField(serializers.CharField):
    """A harness's own session id; the session is created on first sight."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("max_length", 200)
        kwargs.setdefault("help_text", "The harness's session id (created on first sight).")
        super().__init__(**kwargs)


class MemoryApiView(WorkspaceApiView):
    def session_for(
        self, request: Request, external_id: str | None, app: str = ""
    ) -> AgentSession | None:
        return self.own_session(request, external_id, app=app)


class RememberInputSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=MAX_TEXT, trim_whitespace=False)
    compartment = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    state_key = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    state_value = serializers.CharField(
        max_length=MAX_TEXT, required=False, allow_blank=True, default=""
    )
    source = serializers.ChoiceField(choices=Memory.Source.choices, default=Memory.Source.MODEL)  # type: ignore[assignment]
    app = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    metadata = serializers.DictField(required=False, default=dict)
    private = serializers.BooleanField(
        required=False, default=False, help_text="Only you (the key's user) will see it."
    )
    expires_at = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="ISO 8601; gone after it."
    )
    ttl = serializers.CharField(
        required=False, allow_blank=True, default="", help_text='Seconds, or "90m", "12h", "7d".'
    )

    def to_input(self) -> services.RememberInput:
        return remember_input(self.validated_data)


def remember_input(data: dict[str, Any]) -> services.RememberInput:
    """An item as RememberInputSerializer validated it; expiry errors carry stable codes."""
    return services.RememberInput(
        text=data["text"],
        compartment=data["compartment"],
        state_key=data["state_key"],
        state_value=data["state_value"],
        source=data["source"],
        app=data["app"],
        metadata=data["metadata"],
        private=data.get("private", False),
        expires_at=services.parse_expiry(data.get("expires_at"), data.get("ttl")),
    )


class RememberOutput(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=["created", "strengthened", "merged"])
    id = serializers.IntegerField()
    superseded = serializers.ListField(child=serializers.IntegerField())
    similarity = serializers.FloatField(allow_null=True)
    memory = MemoryOutput()


def remember_json(result: services.RememberResult) -> dict[str, Any]:
    return {
        "outcome": result.outcome,
        "id": result.memory.pk,
        "superseded": result.superseded,
        "similarity": result.similarity,
        "memory": memory_json(result.memory),
    }


class MemoryPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    results = MemoryOutput(many=True)


class MemoryFilterSerializer(serializers.Serializer):
    compartment = serializers.CharField(required=False)
    source = serializers.ChoiceField(choices=Memory.Source.choices, required=False)  # type: ignore[assignment]
    app = serializers.CharField(required=False)
    state_key = serializers.CharField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    include_superseded = serializers.BooleanField(required=False, default=False)
    project = serializers.CharField(
        required=False,
        max_length=4096,
        help_text="only this project's entries (its root directory) and the whole workspace's",
    )
    directory = serializers.CharField(
        required=False, max_length=4096, help_text="the same as `project`"
    )
    as_of = serializers.DateTimeField(
        required=False,
        help_text="ISO 8601: what was current then (validity intervals), instead of now",
    )

    def filters(self, **extra: Any) -> selectors.MemoryFilters:
        data: dict[str, Any] = self.validated_data
        project = data.get("project") or data.get("directory")
        return selectors.MemoryFilters(
            project=project.rstrip("/") or project if project else None,
            compartment=data.get("compartment"),
            source=data.get("source"),
            app=data.get("app"),
            state_key=data.get("state_key"),
            since=data.get("since"),
            until=data.get("until"),
            include_superseded=data.get("include_superseded", False),
            as_of=data.get("as_of"),
            **extra,
        )


class MemoryListCreateApi(MemoryApiView):
    class InputSerializer(RememberInputSerializer):
        session = SessionField()

    class ListParams(MemoryFilterSerializer):
        status = serializers.ChoiceField(
            choices=["current", "superseded", "all", "forgotten"],
            default="current",
            help_text="`forgotten`: the tombstones (restorable until `forgotten.purge_after`).",
        )
        contains = serializers.CharField(required=False, max_length=200)

    @extend_schema(
        operation_id="memory_list",
        parameters=[ListParams, *PAGE_PARAMETERS],
        responses=MemoryPageOutput,
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.ListParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        f: dict[str, Any] = params.validated_data
        filters = params.filters(
            viewer_id=request_user(request).pk, contains=f.get("contains") or None
        )
        if f["status"] != "current":
            filters = dataclasses.replace(filters, include_superseded=True)
        qs = selectors.memory_list(workspace=self.workspace, filters=filters)
        if f["status"] == "superseded":
            qs = qs.filter(valid_to__isnull=False)
        elif f["status"] == "forgotten":
            qs = selectors.memory_forgotten_list(
                workspace=self.workspace, viewer_id=request_user(request).pk
            )
        now = timezone.now()
        return page_response(
            request,
            qs.select_related("session", "workspace"),
            render=lambda rows: [memory_json(m, now=now) for m in rows],
        )

    @extend_schema(
        operation_id="memory_remember",
        request=InputSerializer,
        responses={201: RememberOutput, 200: RememberOutput},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = data.to_input()
        session = self.session_for(request, data.validated_data.get("session"), item.app)
        result = services.memory_remember(
            workspace=self.workspace, item=item, user=request_user(request), session=session
        )
        code = status.HTTP_201_CREATED if result.outcome == "created" else status.HTTP_200_OK
        return Response(remember_json(result), status=code)


class MemoryBulkApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        items = RememberInputSerializer(many=True, allow_empty=False, max_length=MAX_BULK)  # type: ignore[call-arg]
        session = SessionField()

    class OutputSerializer(serializers.Serializer):
        results = RememberOutput(many=True)
        created = serializers.IntegerField()
        strengthened = serializers.IntegerField()
        merged = serializers.IntegerField()

    @extend_schema(
        operation_id="memory_remember_bulk", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        raw_items: list[dict[str, Any]] = data.validated_data["items"]
        items = [remember_input(item) for item in raw_items]
        session = self.session_for(request, data.validated_data.get("session"))
        try:
            results = services.memory_remember_bulk(
                workspace=self.workspace, items=items, user=request_user(request), session=session
            )
        except services.MemflowError as exc:
            # Name the item, so a client can fix it and resend the batch.
            index = next(
                (i for i, item in enumerate(items) if _refuses(self.workspace, item)), None
            )
            exc.extra["index"] = index
            raise
        counts = {
            k: sum(r.outcome == k for r in results) for k in ("created", "strengthened", "merged")
        }
        return Response({"results": [remember_json(r) for r in results], **counts})


def _refuses(workspace: Any, item: services.RememberInput) -> bool:
    try:
        services.memory_validate(workspace=workspace, item=item)
    except services.MemflowError:
        return True
    return False


class ForgetParams(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class MemoryDetailApi(MemoryApiView):
    class GetParams(serializers.Serializer):
        session = SessionField()

    class PatchSerializer(serializers.Serializer):
        text = serializers.CharField(max_length=MAX_TEXT, required=False)
        compartment = serializers.CharField(max_length=64, required=False, allow_blank=True)
        pinned = serializers.BooleanField(required=False)
        private = serializers.BooleanField(required=False, help_text="The author's only.")

    @extend_schema(operation_id="memory_get", parameters=[GetParams], responses=MemoryOutput)
    def get(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace, memory_id=memory_id, viewer_id=request_user(request).pk
        )
        params = self.GetParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        session = self.session_for(request, params.validated_data.get("session"))
        services.ledger_record(
            workspace=self.workspace,
            session=session,
            memory_ids=[memory.pk],
            kind=InjectionEvent.Kind.EXPANDED,
        )
        return Response(memory_json(memory))

    @extend_schema(operation_id="memory_update", request=PatchSerializer, responses=MemoryOutput)
    def patch(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace, memory_id=memory_id, viewer_id=request_user(request).pk
        )
        data = self.PatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        if "text" in values or "compartment" in values:
            memory = services.memory_update(
                workspace=self.workspace,
                memory=memory,
                text=values.get("text"),
                compartment=values.get("compartment"),
                actor=rest_actor(request),
            )
        if "pinned" in values:
            memory = services.memory_pin(memory=memory, pinned=values["pinned"])
        if "private" in values:
            memory = services.memory_set_private(
                workspace=self.workspace,
                memory=memory,
                private=values["private"],
                actor=rest_actor(request),
            )
        return Response(memory_json(memory))

    @extend_schema(
        operation_id="memory_forget",
        parameters=[ForgetParams],
        responses={204: None},
        description="Forget: the entry leaves recall and lists at once, and can be restored "
        "(`restore/`) until the workspace's `forget_retention_days` pass; then it is purged.",
    )
    def delete(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace, memory_id=memory_id, viewer_id=request_user(request).pk
        )
        params = ForgetParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        services.memory_forget(
            workspace=self.workspace,
            memory=memory,
            actor=rest_actor(request),
            reason=params.validated_data["reason"],
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemorySupersedeApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        by = serializers.IntegerField(
            required=False, help_text="id of the entry that replaces this one"
        )
        text = serializers.CharField(max_length=MAX_TEXT, required=False, help_text="or a new text")
        session = SessionField()

    class OutputSerializer(serializers.Serializer):
        superseded = MemoryOutput()
        by = MemoryOutput()

    @extend_schema(
        operation_id="memory_supersede", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace, memory_id=memory_id, viewer_id=request_user(request).pk
        )
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        by = None
        if values.get("by") is not None:
            by = selectors.memory_get(
                workspace=self.workspace, memory_id=values["by"], viewer_id=request_user(request).pk
            )
        session = self.session_for(request, values.get("session"))
        successor = services.memory_supersede(
            workspace=self.workspace,
            memory=memory,
            by=by,
            text=values.get("text"),
            user=request_user(request),
            session=session,
            actor=rest_actor(request),
        )
        services.ledger_record(
            workspace=self.workspace,
            session=session,
            memory_ids=[memory.pk],
            kind=InjectionEvent.Kind.SUPERSEDED,
        )
        memory.refresh_from_db()
        successor.refresh_from_db()
        return Response({"superseded": memory_json(memory), "by": memory_json(successor)})


# --- recall --------------------------------------------------------------------------


class RecallInputSerializer(MemoryFilterSerializer):
    query = serializers.CharField(max_length=10_000)
    k = serializers.IntegerField(min_value=1, max_value=100, default=10)
    mode = serializers.ChoiceField(choices=["full", "index", "block"], default="full")
    budget_chars = serializers.IntegerField(min_value=100, max_value=100_000, required=False)
    session = SessionField()
    inject = serializers.BooleanField(
        default=False,
        help_text="The caller puts these results into a model's context: record them as injected.",
    )


class RecallOutput(serializers.Serializer):
    mode = serializers.CharField()
    results = serializers.ListField(child=serializers.DictField(), required=False)
    block = serializers.CharField(required=False)
    ids = serializers.ListField(child=serializers.IntegerField())
    fusion = serializers.DictField()


def run_recall(
    view: MemoryApiView, request: Request, values: dict[str, Any], filters: selectors.MemoryFilters
) -> dict[str, Any]:
    """Recall as the API answers it (services.memory_recall_answer), for this request's session."""
    answer, _, _ = services.memory_recall_answer(
        workspace=view.workspace,
        session=view.session_for(request, values.get("session")),
        values=values,
        filters=dataclasses.replace(filters, viewer_id=request_user(request).pk),
    )
    return answer


class RecallApi(MemoryApiView):
    # A recall is a read, even though it is a POST (the query is a body).
    method_access = {"POST": Access.READ}

    @extend_schema(
        operation_id="memory_recall", request=RecallInputSerializer, responses=RecallOutput
    )
    def post(self, request: Request, slug: str) -> Response:
        data = RecallInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(run_recall(self, request, data.validated_data, data.filters()))


class AutoApi(MemoryApiView):
    """Recall, then capture the text — what a prompt hook does in one call."""

    class InputSerializer(RecallInputSerializer):
        capture = serializers.BooleanField(default=True)
        capture_compartment = serializers.CharField(
            max_length=64, required=False, allow_blank=True, default=""
        )
        source = serializers.ChoiceField(choices=Memory.Source.choices, default=Memory.Source.HOOK)  # type: ignore[assignment]
        app = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

    class OutputSerializer(serializers.Serializer):
        recall = RecallOutput()
        captured = RememberOutput(allow_null=True)

    @extend_schema(operation_id="memory_auto", request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        # Here `source` and `app` describe the capture, not a recall filter.
        filters = dataclasses.replace(data.filters(), source=None, app=None)
        recall = run_recall(self, request, values, filters)
        captured = None
        if values["capture"]:
            session = self.session_for(request, values.get("session"), values["app"])
            result = services.memory_remember(
                workspace=self.workspace,
                item=services.RememberInput(
                    text=values["query"],
                    compartment=values["capture_compartment"],
                    source=values["source"],
                    app=values["app"],
                ),
                user=request_user(request),
                session=session,
            )
            captured = remember_json(result)
        return Response({"recall": recall, "captured": captured})
